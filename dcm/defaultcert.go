package dcm

// The default certificate is the one HAProxy serves to a client whose SNI
// names no route with a certificate of its own. It is a Cert without a
// host: Secret and Version of --default-ssl-certificate's Secret, or zero
// for the self-signed one dcm generates. It changes at runtime like a
// route's (cert-update on it), never by a reload.

// IsDefault says whether c is the default certificate rather than a host's.
func (c Cert) IsDefault() bool { return c.Host == "" && c.Bind == "" }

// SelfSigned says whether c is dcm's self-signed default certificate.
func (c Cert) SelfSigned() bool { return c.Secret == "" }
