package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/server/feedclient"
)

// subcommandsUsage follows dcm's own flags in dcm --help.
const subcommandsUsage = `
Subcommands:
  dcm feed [flags]   print a dcm server's live feed as JSON lines, resuming after disconnects (dcm feed --help)
`

type feedOptions struct {
	server    string
	token     string
	tokenFile string
	since     uint64
	namespace string
	backend   string
}

// errUsage marks errors in how dcm feed was called (exit status 2).
var errUsage = errors.New("usage")

func parseFeedFlags(args []string, stderr io.Writer) (feedOptions, error) {
	var o feedOptions
	fs := pflag.NewFlagSet("dcm feed", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: dcm feed --server URL (--token T | --token-file F) [flags]\n\n"+
			"Prints every message of the server's /api/v1/feed as one JSON line on stdout (docs/feed.md),\n"+
			"reconnects after a disconnect resuming from the last seq, logs reconnects on stderr;\n"+
			"stops on SIGINT or SIGTERM.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.server, "server", "http://127.0.0.1:8080", "the dcm portal's URL")
	fs.StringVar(&o.token, "token", "", "bearer token: a dcm token, or a Kubernetes token allowed to get haproxy.dcm.io")
	fs.StringVar(&o.tokenFile, "token-file", "", "file holding the token (the first token of a dcm --auth-token-file works)")
	fs.Uint64Var(&o.since, "since", 0, "resume after this seq (0: start with a snapshot)")
	fs.StringVar(&o.namespace, "namespace", "", "only this namespace's backends and objects (and HAProxy-wide events)")
	fs.StringVar(&o.backend, "backend", "", "only this backend (be_<kind>:<namespace>:<route>) and HAProxy-wide events")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return o, err // pflag printed the usage
		}
		return o, fmt.Errorf("%w: %w", errUsage, err)
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	case o.token != "" && o.tokenFile != "":
		return o, fmt.Errorf("%w: --token and --token-file exclude each other", errUsage)
	case o.token == "" && o.tokenFile == "":
		return o, fmt.Errorf("%w: a token is required: --token or --token-file", errUsage)
	}
	return o, nil
}

// readToken takes the first token of a file in dcm's token-file format (one
// token per line, optionally followed by role and name; # comments).
func readToken(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 0 && !strings.HasPrefix(fields[0], "#") {
			return fields[0], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("--token-file %s: %w", path, err)
	}
	return "", fmt.Errorf("--token-file %s: no token in it", path)
}

// feedCommand runs dcm feed until ctx ends (nil) or the feed cannot go on.
func feedCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFeedFlags(args, stderr)
	if err != nil {
		return err
	}
	token := o.token
	if o.tokenFile != "" {
		if token, err = readToken(o.tokenFile); err != nil {
			return err
		}
	}
	out := json.NewEncoder(stdout)
	out.SetEscapeHTML(false)
	err = feedclient.Run(ctx, feedclient.Options{
		URL: o.server, Token: token, Since: o.since, Namespace: o.namespace, Backend: o.backend,
		Log: slog.New(slog.NewTextHandler(stderr, nil)),
	}, func(m dcm.FeedMessage) error {
		if err := out.Encode(m); err != nil {
			return fmt.Errorf("write stdout: %w", err)
		}
		return nil
	})
	if ctx.Err() != nil {
		return nil // interrupted: the way a tail ends
	}
	return err
}

// feedMain is dcm feed as a process: exit status 0 when interrupted, 2 for
// a wrong call, 1 when the feed cannot go on (refused token, bad URL…).
func feedMain(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := feedCommand(ctx, args, os.Stdout, os.Stderr)
	switch {
	case err == nil, errors.Is(err, pflag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(os.Stderr, "dcm feed: %v (see dcm feed --help)\n", err)
		return 2
	}
	fmt.Fprintln(os.Stderr, "dcm feed:", err)
	return 1
}
