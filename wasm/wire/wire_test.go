package wire_test

import (
	"reflect"
	"testing"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/wasm/wire"
)

// TestPlannerShapes: every member of the planner's views of a snapshot and
// a feed message is a member of the model's shape, with the same name,
// type and options, so that the planner reads what the server writes; the
// view's snapshot stands where the model's does.
func TestPlannerShapes(t *testing.T) {
	sameMembers(t, reflect.TypeFor[wire.PlannerSnapshot](), reflect.TypeFor[dcm.Snapshot](), nil)
	sameMembers(t, reflect.TypeFor[wire.PlannerFeedMessage](), reflect.TypeFor[dcm.FeedMessage](),
		map[reflect.Type]reflect.Type{reflect.TypeFor[*wire.PlannerSnapshot](): reflect.TypeFor[*dcm.Snapshot]()})
}

func sameMembers(t *testing.T, view, model reflect.Type, stands map[reflect.Type]reflect.Type) {
	t.Helper()
	for i := range view.NumField() {
		v := view.Field(i)
		m, ok := model.FieldByName(v.Name)
		if !ok {
			t.Errorf("%v.%s: %v has no such field", view, v.Name, model)
			continue
		}
		typ := v.Type
		if s, ok := stands[typ]; ok {
			typ = s
		}
		if typ != m.Type || v.Tag.Get("json") != m.Tag.Get("json") {
			t.Errorf("%v.%s is %v `json:%q`; %v has %v `json:%q`", view, v.Name, v.Type, v.Tag.Get("json"), model, m.Type, m.Tag.Get("json"))
		}
	}
}
