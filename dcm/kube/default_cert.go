package kube

import (
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/dcm-router/dcm/dcm"
)

// The default certificate (--default-ssl-certificate=<ns>/<name>): a
// kubernetes.io/tls Secret, served to every host without a certificate of
// its own. The Source watches it with an informer of its own, narrowed to
// its name: its namespace need not be one dcm serves routes from, and
// Desired carries its version like any route's certificate, so a rotation
// is a set ssl cert on default.pem, never a reload.
//
// A Secret missing or invalid from the start: HAProxy serves dcm's
// self-signed certificate, and the Secret is rejected (logged, counted in
// dcm_rejected_objects_total, a rejected event in the portal's feed and
// the snapshot's rejected list) until it is valid. One that turns missing or invalid later: the last valid version
// keeps being served, rejected the same way, as a Secret of an Ingress
// does: a botched rotation must not turn every host's certificate into one
// no client trusts.
type defaultCertWatch struct {
	secrets corelisters.SecretLister // nil without the flag
	served  dcm.Cert                 // under Source.mu: what Desired hands out
}

// watchDefaultCert starts following the default certificate's Secret.
func (s *Source) watchDefaultCert(client kubernetes.Interface) {
	ns, name, ok := strings.Cut(s.opts.DefaultCertificate, "/")
	if !ok {
		return
	}
	f := informers.NewSharedInformerFactoryWithOptions(client, s.opts.Resync, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		}))
	inf := f.Core().V1().Secrets()
	if _, err := inf.Informer().AddEventHandler(s.handlers(prefixSecret, objectKey)); err != nil && s.initErr == nil {
		s.initErr = fmt.Errorf("kube: add default certificate event handler: %w", err)
	}
	s.dc.secrets = inf.Lister()
	s.factories = append(s.factories, f)
	s.hasSynced = append(s.hasSynced, inf.Informer().HasSynced)
}

// isDefaultCert says whether ns/name is the default certificate's Secret.
func (s *Source) isDefaultCert(secret string) bool {
	return s.opts.DefaultCertificate != "" && secret == s.opts.DefaultCertificate
}

// syncDefaultCert reads the default certificate's Secret into t.
func (s *Source) syncDefaultCert(t *txn) {
	if s.dc.secrets == nil {
		return
	}
	key := s.opts.DefaultCertificate
	ns, name, _ := strings.Cut(key, "/")
	ref := dcm.ObjectRef{Kind: KindSecret, Namespace: ns, Name: name}
	kept := dcm.Cert{}
	if v := s.pems.newestCert(key); v != "" {
		kept = dcm.Cert{Secret: key, Version: v}
	}
	fallback := "dcm's self-signed certificate is served"
	if !kept.SelfSigned() {
		fallback = "its last valid certificate is still served"
	}
	sec, err := s.dc.secrets.Secrets(ns).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		s.log.Warn("default certificate: no Secret", "secret", key, "served", fallback)
		t.reject(dcm.Rejection{Object: ref, Reason: dcm.RejectInvalidValue,
			Message: "--default-ssl-certificate: no kubernetes.io/tls Secret " + key + ": " + fallback})
		t.defaultCert = &kept
		return
	case err != nil:
		s.log.Warn("reading the default certificate's Secret", "secret", key, "err", err)
		return
	}
	pem, version, err := SecretCert(sec)
	if err != nil {
		s.log.Warn("default certificate: invalid Secret", "secret", key, "err", RejectMessage(err), "served", fallback)
		t.reject(dcm.Rejection{Object: ref, Reason: RejectReason(err),
			Message: "--default-ssl-certificate: " + RejectMessage(err) + ": " + fallback})
		t.defaultCert = &kept
		return
	}
	t.accept(ref)
	s.pems.keepCert(key, version, pem)
	t.defaultCert = &dcm.Cert{Secret: key, Version: version}
}

// commitDefaultCert publishes the default certificate t read; it says
// whether it changed. Call under mu.
func (s *Source) commitDefaultCert(t *txn) bool {
	if t.defaultCert == nil || *t.defaultCert == s.dc.served {
		return false
	}
	s.dc.served = *t.defaultCert
	return true
}
