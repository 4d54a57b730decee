package dcm

// TrafficRates is GET /api/v1/traffic: the recent request and error rates
// of each route, by the name of its backend (be_<kind>:<namespace>:<route>,
// whichever HAProxy proxy carries it), for the portal's sparklines.
type TrafficRates struct {
	// Every is the seconds between two samples (dcm's --traffic-interval).
	Every float64 `json:"every"`
	// Backends holds the samples, oldest first, at most Samples of them.
	Backends map[string]TrafficSeries `json:"backends"`
}

// TrafficSeries is one route's rates per second, one entry per read of
// HAProxy's counters. Errors are 5xx responses, failed connections to a
// server and aborted responses.
type TrafficSeries struct {
	Requests []float64 `json:"requests"`
	Errors   []float64 `json:"errors"`
}

// TrafficSamples is how many samples a TrafficSeries keeps.
const TrafficSamples = 30
