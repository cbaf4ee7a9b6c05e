package ui

import (
	"context"
	"testing"
	"time"
)

// The wait between Nova reads doubles while Nova shows nothing new, up to twelve times the
// interval; anything new brings it back; a slow read stretches it to three times its length.
func TestRefreshBacksOffAtRest(t *testing.T) {
	m := New(context.Background(), nil, Options{Refresh: 5 * time.Second})
	var got []time.Duration
	for range 6 {
		m.every = m.nextEvery(inventoryMsg{fresh: true, unmoved: true})
		got = append(got, m.every)
	}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 60 * time.Second, 60 * time.Second, 60 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("at rest: %v, want %v", got, want)
		}
	}
	if e := m.nextEvery(inventoryMsg{fresh: true}); e != 5*time.Second {
		t.Errorf("after a change: %v, want the interval (5s)", e)
	}
	if e := m.nextEvery(inventoryMsg{fresh: true, took: 4 * time.Second}); e != 12*time.Second {
		t.Errorf("after a 4 s read: %v, want 12s", e)
	}
}
