package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/haproxy"
	"github.com/dcm-router/dcm/dcm/plan"
)

// Config returns the files HAProxy loads as they are on disk, and the drift
// between them and HAProxy's runtime: the files dcm would write from what
// HAProxy runs right now, compared line by line with the files on disk.
// Nothing is changed; the next sync repairs what drifted.
func (e *Engine) Config(ctx context.Context) (dcm.ConfigView, error) {
	e.FlushFiles() // the files of every state applied so far
	disk, err := e.driver.ReadFiles()
	if err != nil {
		return dcm.ConfigView{}, fmt.Errorf("read the files: %w", err)
	}
	obs, err := e.driver.Observe(ctx)
	if err != nil {
		return dcm.ConfigView{}, fmt.Errorf("read HAProxy's state: %w", err)
	}
	e.mu.Lock()
	runtime, _, _ := plan.Merge(e.actual, obs, nil, true)
	e.mu.Unlock()
	want, err := e.driver.Render(runtime)
	if err != nil {
		return dcm.ConfigView{}, fmt.Errorf("render HAProxy's state: %w", err)
	}
	// haproxy.cfg and the backends' files, as HAProxy reads them: one text.
	const cfgName = haproxy.ConfigName + " + " + haproxy.BackendsDir + "/*.cfg"
	view := dcm.ConfigView{Files: []dcm.ConfigFile{{Name: cfgName, Content: string(disk.Text())}}, Drift: []string{}}
	view.Drift = append(view.Drift, lineDiff(cfgName, string(disk.Text()), string(want.Text()))...)
	names := make([]string, 0, len(disk.Maps))
	for n := range disk.Maps {
		names = append(names, n)
	}
	for n := range want.Maps {
		if _, ok := disk.Maps[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		if b, ok := disk.Maps[n]; ok {
			view.Files = append(view.Files, dcm.ConfigFile{Name: n, Content: string(b)})
		}
		view.Drift = append(view.Drift, lineDiff(n, string(disk.Maps[n]), string(want.Maps[n]))...)
	}
	// The crt-list names the certificates; the certificate files hold keys
	// and are never shown.
	if disk.CrtList != nil || want.CrtList != nil {
		view.Files = append(view.Files, dcm.ConfigFile{Name: haproxy.CrtListName, Content: string(disk.CrtList)})
		view.Drift = append(view.Drift, lineDiff(haproxy.CrtListName, string(disk.CrtList), string(want.CrtList))...)
	}
	return view, nil
}

// lineDiff lists the lines only one side has: "file: on disk only: …" and
// "file: in HAProxy only: …". Order is not compared (HAProxy's order is the
// renderer's), only content.
func lineDiff(name, disk, runtime string) []string {
	count := map[string]int{}
	for _, l := range strings.Split(disk, "\n") {
		count[l]++
	}
	for _, l := range strings.Split(runtime, "\n") {
		count[l]--
	}
	var out []string
	for _, l := range strings.Split(disk, "\n") {
		if count[l] > 0 {
			out = append(out, name+": on disk only: "+strings.TrimSpace(l))
			count[l]--
		}
	}
	for _, l := range strings.Split(runtime, "\n") {
		if count[l] < 0 {
			out = append(out, name+": in HAProxy only: "+strings.TrimSpace(l))
			count[l]++
		}
	}
	return out
}
