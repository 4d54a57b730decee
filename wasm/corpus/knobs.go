package corpus

import "github.com/dcm-router/dcm/dcm"

// withKnobs gives some routes the server knobs of OpenShift's router,
// picked by name like withAccess: previews then carry set maxconn server
// and servers named after their check interval.
func withKnobs(r *dcm.Route) {
	switch pickBy(r.Name+"/maxconn", []string{"", "", "10", "100"}) {
	case "10":
		r.MaxConn = 10
	case "100":
		r.MaxConn = 100
	}
	if r.Check && pickBy(r.Name+"/inter", []string{"", "", "i"}) != "" {
		r.CheckInterMillis = 2000
	}
}

// toggledMaxConn is another connection limit than n, so an updated route
// always changes its servers' (none becomes 20, any other none).
func toggledMaxConn(n int) int {
	if n == 0 {
		return 20
	}
	return 0
}

// toggledInter is another check interval than ms: the default becomes
// 3000ms, any other the default.
func toggledInter(ms int64) int64 {
	if ms == 0 {
		return 3000
	}
	return 0
}
