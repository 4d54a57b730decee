package system

import (
	"fmt"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// validateSecretFlag checks a flag naming a Secret as namespace/name, the
// way ingress-nginx and haproxy-ingress spell --default-ssl-certificate.
func validateSecretFlag(flag, v string) error {
	if strings.HasPrefix(v, dcm.RouteCertPrefix) {
		return fmt.Errorf("%s %q: want namespace/name of a Secret", flag, v)
	}
	if err := dcm.ValidateSecretRef(flag, v); err != nil {
		return fmt.Errorf("%s %q: want namespace/name of a Secret: %w", flag, v, err)
	}
	return nil
}
