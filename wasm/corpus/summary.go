package corpus

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// Summary describes a corpus: sizes, modes and what it exercises.
func Summary(scenarios []Scenario) string {
	var bytes, follow, calls, largest int
	modes, computeModes := map[string]int{}, map[string]int{}
	kinds := map[string]int{}
	events := map[string]int{}
	malformed := 0
	for _, s := range scenarios {
		size := len(s.Compute) + len(s.Snapshot) + len(s.WhatIfs)
		for _, c := range s.Follow {
			size += len(c.Arg)
		}
		bytes += size
		largest = max(largest, size)
		var snap struct {
			Caps dcm.Caps `json:"caps"`
		}
		if json.Unmarshal([]byte(s.Snapshot), &snap) != nil {
			malformed++
		} else {
			modes[modeName(snap.Caps)]++
		}
		var in struct {
			Caps dcm.Caps `json:"caps"`
		}
		if json.Unmarshal([]byte(s.Compute), &in) != nil {
			malformed++
		} else {
			computeModes[modeName(in.Caps)]++
		}
		countKinds := func(text string) {
			var ws []struct{ Kind string }
			if json.Unmarshal([]byte(text), &ws) != nil {
				malformed++
			}
			for _, w := range ws {
				kinds[w.Kind]++
			}
		}
		countKinds(s.WhatIfs)
		if len(s.Follow) > 0 {
			follow++
		}
		for _, c := range s.Follow {
			calls++
			switch c.Fn {
			case FnSimulate:
				countKinds(c.Arg)
			case FnFeed:
				var m struct {
					Type  string
					Event *struct{ Type string }
				}
				if json.Unmarshal([]byte(c.Arg), &m) != nil {
					events["malformed"]++
				} else if m.Event != nil {
					events["event:"+m.Event.Type]++
				} else {
					events[m.Type]++
				}
			}
		}
	}
	return fmt.Sprintf("%d scenarios, %.1f MB of input JSON (largest %d KB); compute modes %s; snapshot modes %s; what-ifs %s; "+
		"%d follow sequences (%d calls; feed %s); %d malformed inputs on purpose",
		len(scenarios), float64(bytes)/1e6, largest/1000, counts(computeModes), counts(modes), counts(kinds), follow, calls, counts(events), malformed)
}

func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		name := k
		if name == "" {
			name = `""`
		}
		parts[i] = name + "=" + strconv.Itoa(m[k])
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func modeName(c dcm.Caps) string {
	switch c.Mode {
	case dcm.ModeDynamic:
		name := "dynamic-noadd"
		if c.AddServer {
			name = "dynamic"
		}
		if c.RuntimeCerts {
			name += "-certs"
		}
		return name
	case dcm.ModeSlots:
		return "slots" + strconv.Itoa(c.Slots)
	}
	return string(c.Mode)
}
