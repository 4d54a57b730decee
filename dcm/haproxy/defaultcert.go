package haproxy

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/dcm-router/dcm/dcm"
)

// selfSignedName is the file, in the work dir, of the self-signed default
// certificate dcm generates: the fallback without --default-ssl-certificate
// or before its Secret is valid.
const selfSignedName = "self-signed.pem"

// adoptSelfSigned is the first start of a dcm that keeps its self-signed
// certificate apart: the one an older dcm served as default.pem (then
// always self-signed) is kept, so clients that pinned it still see it.
func adoptSelfSigned(dir, path string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(dir, DefaultCertName))
	if err != nil {
		return nil, err
	}
	if err := writeAtomicMode(path, b, 0o600); err != nil {
		return nil, fmt.Errorf("default certificate: %w", err)
	}
	return b, nil
}

// defaultCertCommands rotates the default certificate: a set and a commit
// on its file. Every HTTPS bind loads it first (crt default.pem), no
// crt-list line names it, so it is never added nor deleted, only updated.
func defaultCertCommands(op dcm.Op, pemText string) ([]Command, *Command, error) {
	if op.Kind != dcm.OpCertUpdate {
		return nil, nil, fmt.Errorf("op %s: the default certificate is only updated", op.Kind)
	}
	if err := payloadText(pemText); err != nil {
		return nil, nil, fmt.Errorf("op %s default certificate: %w", op.Kind, err)
	}
	file := DefaultCertName
	return []Command{
		{text: "set ssl cert " + file, payload: pemText, kind: replySetCert, file: file},
		{text: "commit ssl cert " + file, kind: replyCommitCert, file: file},
	}, &Command{text: "abort ssl cert " + file, kind: replyAny, file: file}, nil
}
