package haproxy

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/dcm-router/dcm/dcm"
)

// CertSource hands the driver the PEM (certificate chain and key) of a
// Secret's version. The model only carries the version; the key goes from
// the source to the disk and the admin socket, nowhere else.
type CertSource interface {
	CertPEM(secret, version string) ([]byte, error)
}

// Certificates at runtime (HAProxy 2.6, checked against the binary by
// TestCertCommands):
//
//	new ssl cert <f>                 → [5]: New empty certificate store '<f>'!
//	set ssl cert <f> <<\n<pem>\n     → [5]: Transaction created for certificate <f>!
//	commit ssl cert <f>              → Committing <f>[.…]\nSuccess!   (a dot per bind using it)
//	abort ssl cert <f>               → [5]: Transaction aborted for certificate '<f>'!
//	add ssl crt-list <l> <<\n<f> [alpn <p>] <sni>\n → Inserting certificate '<f>' in crt-list '<l>'[.…]\nSuccess!
//	del ssl crt-list <l> <f>         → [5]: Entry '<f>' deleted in crtlist '<l>'!
//	del ssl cert <f>                 → [5]: Certificate '<f>' deleted!
//
// 2.6 holds one SSL transaction at a time, process-wide: a set ssl cert
// for another file while one is open *updates the open one* (its reply
// names the open file). So every set is followed by its commit in the
// same batch, only "Transaction created" counts as success, and a failed
// batch is followed by an abort.

// payloadText is the allow-list of a payload: printable ASCII lines, none
// empty (an empty line ends the payload on the socket).
func payloadText(p string) error {
	if p == "" || strings.HasSuffix(p, "\n") || strings.Contains(p, "\n\n") {
		return errors.New("payload: empty, or with an empty line")
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c != '\n' && (c < 0x20 || c > 0x7e) {
			return errors.New("payload: not printable ASCII")
		}
	}
	return nil
}

// NormalizePEM drops carriage returns, blank lines and what is not inside a
// PEM block, so that a Secret's PEM can be sent as a payload. The file on
// disk gets the same bytes (plus a final newline).
func NormalizePEM(b []byte) (string, error) {
	var out []string
	rest := b
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		out = append(out, strings.TrimRight(string(pem.EncodeToMemory(block)), "\n"))
	}
	if len(out) == 0 {
		return "", errors.New("no PEM block")
	}
	s := strings.Join(out, "\n")
	if err := payloadText(s); err != nil {
		return "", err
	}
	return s, nil
}

func certFileFor(host string) (string, error) {
	if host == "" {
		return "", errors.New("certificate without host")
	}
	if err := dcm.ValidateRouteHost("certificate host", host); err != nil {
		return "", err
	}
	return CertFile(host), nil
}

var (
	commitCertRE   = regexp.MustCompile(`^Committing (\S+?)\.*\nSuccess!$`)
	addCrtListRE   = regexp.MustCompile(`^Inserting certificate '(\S+)' in crt-list '(\S+)'\.*\nSuccess!$`)
	continuationRE = regexp.MustCompile(`^(\+ )+`)
)

// CertCommands spells one cert op as its commands; pem is the normalized
// certificate (NormalizePEM) for cert-add and cert-update, h2 the HTTP/2
// policy its crt-list line is listed with. The abort command
// undoes an open transaction after a failure (nil for cert-del).
func CertCommands(op dcm.Op, pemText string, h2 HTTP2) (cmds []Command, abort *Command, err error) {
	if op.Cert == nil {
		return nil, nil, fmt.Errorf("op %s: no certificate", op.Kind)
	}
	if op.Cert.IsDefault() {
		return defaultCertCommands(op, pemText)
	}
	if op.Cert.Bind != "" {
		return gatewayCertCommands(op, pemText)
	}
	host := op.Cert.Host
	file, err := certFileFor(host)
	if err != nil {
		return nil, nil, fmt.Errorf("op %s: %w", op.Kind, err)
	}
	set := func() (Command, error) {
		if err := payloadText(pemText); err != nil {
			return Command{}, fmt.Errorf("op %s %s: %w", op.Kind, host, err)
		}
		return Command{text: "set ssl cert " + file, payload: pemText, kind: replySetCert, file: file}, nil
	}
	ab := Command{text: "abort ssl cert " + file, kind: replyAny, file: file}
	commit := Command{text: "commit ssl cert " + file, kind: replyCommitCert, file: file}
	switch op.Kind {
	case dcm.OpCertAdd:
		s, err := set()
		if err != nil {
			return nil, nil, err
		}
		return []Command{
			{text: "new ssl cert " + file, kind: replyNewCert, file: file},
			s, commit,
			{text: "add ssl crt-list " + CrtListName, payload: h2.crtListLine(*op.Cert), kind: replyAddCrtList, file: file},
		}, &ab, nil
	case dcm.OpCertUpdate:
		s, err := set()
		if err != nil {
			return nil, nil, err
		}
		return []Command{s, commit}, &ab, nil
	case dcm.OpCertDel:
		return []Command{
			{text: "del ssl crt-list " + CrtListName + " " + file, kind: replyDelCrtList, file: file},
			{text: "del ssl cert " + file, kind: replyDelCert, file: file},
		}, nil, nil
	}
	return nil, nil, fmt.Errorf("op %s: not a certificate op", op.Kind)
}

// Destination CA files at runtime (HAProxy 2.6, checked against the binary
// by TestCACommands):
//
//	new ssl ca-file <f>              → [5]: New CA file created '<f>'!
//	set ssl ca-file <f> <<\n<pem>\n  → [5]: transaction created for CA <f>!
//	commit ssl ca-file <f>           → Committing <f>[.…]\nSuccess!
//	abort ssl ca-file <f>            → [5]: Transaction aborted for certificate '<f>'! (or [3]: No ongoing transaction!)
//	del ssl ca-file <f>              → [5]: CA file '<f>' deleted!
//
// 2.6 deletes a CA file even while servers use it, and a server reads its
// file only when it is created: so a file is named after its CA's version,
// is added before the first server that needs it and deleted after the last
// one is gone (the planner orders it so).

// CACommands spells one CA op as its commands; pemText is the normalized
// CA (NormalizePEM) for ca-add. The abort command undoes an open
// transaction after a failure (nil for ca-del).
func CACommands(op dcm.Op, pemText string) (cmds []Command, abort *Command, err error) {
	if op.Upstream == nil {
		return nil, nil, fmt.Errorf("op %s: no CA", op.Kind)
	}
	v := op.Upstream.Version
	if v == "" {
		return nil, nil, fmt.Errorf("op %s: CA without a version", op.Kind)
	}
	if err := dcm.ValidateCertVersion("ca version", v); err != nil {
		return nil, nil, fmt.Errorf("op %s: %w", op.Kind, err)
	}
	file := CAFile(v)
	switch op.Kind {
	case dcm.OpCAAdd:
		if err := payloadText(pemText); err != nil {
			return nil, nil, fmt.Errorf("op %s %s: %w", op.Kind, op.Upstream.CA, err)
		}
		return []Command{
			{text: "new ssl ca-file " + file, kind: replyNewCA, file: file},
			{text: "set ssl ca-file " + file, payload: pemText, kind: replySetCA, file: file},
			{text: "commit ssl ca-file " + file, kind: replyCommitCA, file: file},
		}, &Command{text: "abort ssl ca-file " + file, kind: replyAny, file: file}, nil
	case dcm.OpCADel:
		return []Command{{text: "del ssl ca-file " + file, kind: replyDelCA, file: file}}, nil, nil
	}
	return nil, nil, fmt.Errorf("op %s: not a CA op", op.Kind)
}

// certSucceeded checks the replies of the certificate and CA commands.
func (c Command) certSucceeded(reply string) bool {
	sev, msg, prefixed := severity(reply)
	switch c.kind {
	case replyNewCert:
		return prefixed && sev == 5 && msg == "New empty certificate store '"+c.file+"'!"
	case replySetCert:
		return prefixed && sev == 5 && msg == "Transaction created for certificate "+c.file+"!"
	case replyCommitCert:
		m := commitCertRE.FindStringSubmatch(reply)
		return !prefixed && m != nil && m[1] == c.file
	case replyAddCrtList:
		m := addCrtListRE.FindStringSubmatch(reply)
		return !prefixed && m != nil && m[1] == c.file && m[2] == c.crtList()
	case replyDelCrtList:
		return prefixed && sev == 5 && msg == "Entry '"+c.file+"' deleted in crtlist '"+c.crtList()+"'!"
	case replyDelCert:
		return prefixed && sev == 5 && msg == "Certificate '"+c.file+"' deleted!"
	case replyNewCA:
		return prefixed && sev == 5 && msg == "New CA file created '"+c.file+"'!"
	case replySetCA:
		return prefixed && sev == 5 && msg == "transaction created for CA "+c.file+"!"
	case replyCommitCA:
		m := commitCertRE.FindStringSubmatch(reply)
		return !prefixed && m != nil && m[1] == c.file
	case replyDelCA:
		return prefixed && sev == 5 && msg == "CA file '"+c.file+"' deleted!"
	case replyAny:
		return true
	}
	return false
}

// EnsureDefaultCert makes sure dir holds the self-signed certificate that
// is the HTTPS frontend's default one without --default-ssl-certificate
// (served to a client whose SNI matches no route): generated the first
// time, then kept, so clients that pinned it across restarts keep seeing
// it. It returns the PEM. It has a file of its own, since default.pem
// holds whatever default is served, a Secret's too.
func EnsureDefaultCert(dir string) ([]byte, error) {
	path := filepath.Join(dir, selfSignedName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		b, err = adoptSelfSigned(dir, path)
	}
	if err == nil {
		if _, err := NormalizePEM(b); err != nil {
			return nil, fmt.Errorf("default certificate %s: %w", path, err)
		}
		return b, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("default certificate: %w", err)
	}
	b, err = selfSigned()
	if err != nil {
		return nil, fmt.Errorf("default certificate: %w", err)
	}
	if err := writeAtomicMode(path, b, 0o600); err != nil {
		return nil, fmt.Errorf("default certificate: %w", err)
	}
	return b, nil
}

func selfSigned() ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "dcm default certificate", Organization: []string{"dcm"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	_ = pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: der})
	_ = pem.Encode(&out, &pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	return out.Bytes(), nil
}
