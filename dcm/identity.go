package dcm

// Verb is what a request to the portal or API does: read the state, or act
// on HAProxy or Kubernetes.
type Verb string

const (
	VerbRead Verb = "read"
	VerbAct  Verb = "act"
)

// Roles of tokens from a token file.
const (
	RoleAdmin  = "admin"  // read and act
	RoleViewer = "viewer" // read only
)

// Identity is who made a request.
type Identity struct {
	Name   string   `json:"name"`
	Groups []string `json:"groups,omitempty"`
	// Role is set for identities from a token file; empty means Kubernetes
	// (TokenReview) vouched for the identity and RBAC decides its verbs.
	Role string `json:"role,omitempty"`
}
