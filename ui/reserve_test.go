package ui

import (
	"context"
	"strings"
	"testing"
	"time"
)

// fakeMachines records what the demo's commands asked of its machines.
type fakeMachines struct{ asked []string }

func (f *fakeMachines) KillHost(node string) error {
	f.asked = append(f.asked, "kill "+node)
	return nil
}
func (f *fakeMachines) ReviveHost(node string) error {
	f.asked = append(f.asked, "revive "+node)
	return nil
}
func (f *fakeMachines) SetCondition(node, typ string, on bool) error {
	f.asked = append(f.asked, "condition "+node+" "+typ)
	return nil
}
func (f *fakeMachines) SetReserve(node string, on bool) error {
	if on {
		f.asked = append(f.asked, "reserve "+node)
	} else {
		f.asked = append(f.asked, "unreserve "+node)
	}
	return nil
}

// The demo's :reserve NODE [off] labels a node the failover reserve, or no longer, and says
// what follows; a bad line says the usage and asks nothing; outside the demo it says how a
// real node is labelled.
func TestTheDemosReserveCommand(t *testing.T) {
	f := &fakeMachines{}
	m := New(context.Background(), nil, Options{Title: "test", Now: func() time.Time { return t0 }, Machines: f})
	m = command(m, "reserve compute-3")
	if !strings.Contains(m.status, "compute-3 labelled the failover reserve") {
		t.Errorf("after :reserve compute-3: %q", m.status)
	}
	m = command(m, "reserve compute-3 off")
	if !strings.Contains(m.status, "no longer the failover reserve") {
		t.Errorf("after :reserve compute-3 off: %q", m.status)
	}
	m = command(m, "reserve compute-3 now")
	if !strings.Contains(m.status, "usage: :reserve NODE [off]") {
		t.Errorf("after a bad line: %q", m.status)
	}
	if strings.Join(f.asked, "; ") != "reserve compute-3; unreserve compute-3" {
		t.Errorf("asked of the machines: %q", f.asked)
	}
	real := command(New(context.Background(), nil, Options{Title: "test", Now: func() time.Time { return t0 }}), "reserve compute-3")
	if !strings.Contains(real.status, "kubectl label") {
		t.Errorf("outside the demo: %q", real.status)
	}
}

// The demo's own commands are in ? and in the unknown command's hint, and only in the demo.
func TestTheDemosCommandsAreSaid(t *testing.T) {
	demo := New(context.Background(), nil, Options{Title: "test", Now: func() time.Time { return t0 }, Machines: &fakeMachines{}})
	if h := helpView(&demo.s); !strings.Contains(h, ":kill NODE") || !strings.Contains(h, ":condition NODE TYPE") {
		t.Errorf("the demo's help:\n%s", h)
	}
	if m := command(demo, "frobnicate"); !strings.Contains(m.status, ":kill :revive :condition :reserve") {
		t.Errorf("an unknown command in the demo: %q", m.status)
	}
	real := New(context.Background(), nil, Options{Title: "test", Now: func() time.Time { return t0 }})
	if h := helpView(&real.s); strings.Contains(h, ":kill") {
		t.Errorf("a real cluster's help lists the demo's :kill")
	}
}
