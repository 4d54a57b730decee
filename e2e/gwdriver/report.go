package gwdriver

import (
	"fmt"
	"io"
	"os"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Report is what the summary reads of the suite's conformance report
// (sigs.k8s.io/gateway-api/conformance/apis/v1 ConformanceReport).
type Report struct {
	Date              string `json:"date"`
	GatewayAPIVersion string `json:"gatewayAPIVersion"`
	GatewayAPIChannel string `json:"gatewayAPIChannel"`
	Mode              string `json:"mode"`
	Implementation    struct {
		Project string `json:"project"`
		Version string `json:"version"`
	} `json:"implementation"`
	Profiles []ProfileReport `json:"profiles"`
}

// ProfileReport is one profile's results.
type ProfileReport struct {
	Name     string  `json:"name"`
	Summary  string  `json:"summary"`
	Core     Status  `json:"core"`
	Extended *Status `json:"extended"`
}

// Status is the results of a profile's core or extended tests.
type Status struct {
	Result     string `json:"result"`
	Statistics struct {
		Passed  int `json:"Passed"`
		Skipped int `json:"Skipped"`
		Failed  int `json:"Failed"`
	} `json:"statistics"`
	FailedTests  []string `json:"failedTests"`
	SkippedTests []string `json:"skippedTests"`
}

// ReadReport reads the suite's report.
func ReadReport(path string) (Report, error) {
	var r Report
	f, err := os.Open(path)
	if err != nil {
		return r, fmt.Errorf("the suite's report: %w", err)
	}
	defer f.Close()
	if err := utilyaml.NewYAMLOrJSONDecoder(f, 4096).Decode(&r); err != nil {
		return r, fmt.Errorf("the suite's report %s: %w", path, err)
	}
	return r, nil
}

// WriteSummary writes passed, failed and skipped per profile.
func (r Report) WriteSummary(w io.Writer) {
	fmt.Fprintf(w, "Gateway API %s (%s channel), %s %s, %s\n", r.GatewayAPIVersion, r.GatewayAPIChannel,
		r.Implementation.Project, r.Implementation.Version, r.Date)
	if len(r.Profiles) == 0 {
		fmt.Fprintln(w, "  no profile results (the suite stopped before running a test)")
	}
	line := func(profile, part string, s Status) {
		fmt.Fprintf(w, "  %-14s %-8s %-8s passed %3d  failed %3d  skipped %3d\n", profile, part, s.Result,
			s.Statistics.Passed, s.Statistics.Failed, s.Statistics.Skipped)
		if len(s.FailedTests) > 0 {
			fmt.Fprintf(w, "  %-14s %-8s failed: %s\n", "", "", strings.Join(s.FailedTests, ", "))
		}
	}
	for _, p := range r.Profiles {
		line(p.Name, "core", p.Core)
		if p.Extended != nil {
			line(p.Name, "extended", *p.Extended)
		}
	}
}

// Failures are why the run is not a pass, one line each: a profile whose
// core or extended tests failed (every test run is of a claimed feature),
// or no profile at all (the suite stopped before running a test). None is
// a pass.
func (r Report) Failures() []string {
	if len(r.Profiles) == 0 {
		return []string{"the report has no profile results"}
	}
	var out []string
	check := func(profile, part string, s Status) {
		if s.Statistics.Failed > 0 || s.Result == "failure" {
			out = append(out, fmt.Sprintf("%s %s: %d failed (%s)", profile, part, s.Statistics.Failed,
				strings.Join(s.FailedTests, ", ")))
		}
	}
	for _, p := range r.Profiles {
		check(p.Name, "core", p.Core)
		if p.Extended != nil {
			check(p.Name, "extended", *p.Extended)
		}
	}
	return out
}
