package sim

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/notify"
)

// Maintenances is the demo's NodeMaintenance store, with the API server's semantics the
// controller relies on: a deletion with finalizers only marks the resource, which goes when
// the last finalizer is removed; nodeName cannot change. (Tests of the real thing run the
// CRD on a real API server.)
type Maintenances struct {
	mu     sync.Mutex
	items  map[string]*storedMaintenance
	signal notify.Signal
}

type storedMaintenance struct {
	nm         model.NodeMaintenance
	finalizers []string
}

// NewMaintenances makes an empty store.
func NewMaintenances() *Maintenances {
	return &Maintenances{items: map[string]*storedMaintenance{}}
}

func (m *Maintenances) changed() { m.signal.Notify() }

// Subscribe signals after any change (bursts coalesce).
func (m *Maintenances) Subscribe() (<-chan struct{}, func()) { return m.signal.Subscribe() }

// List is every NodeMaintenance.
func (m *Maintenances) List() []model.NodeMaintenance {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]model.NodeMaintenance, 0, len(m.items))
	for _, it := range m.items {
		nm := it.nm
		nm.Guarded = len(it.finalizers) > 0
		nm.Status.PendingPods = slices.Clone(nm.Status.PendingPods)
		nm.Status.PendingVMs = slices.Clone(nm.Status.PendingVMs)
		out = append(out, nm)
	}
	return out
}

// SetFinalizer adds or removes the controller's finalizer; the last one removed from a
// deleted resource lets it go.
func (m *Maintenances) SetFinalizer(_ context.Context, name string, on bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	it, ok := m.items[name]
	if !ok && !on {
		return nil // gone already: nothing left to hold
	}
	if !ok {
		return fmt.Errorf("nodemaintenances %q not found", name)
	}
	const fin = "maintenance.drainctl.io/restore-node"
	has := slices.Contains(it.finalizers, fin)
	switch {
	case on && !has:
		if it.nm.Deleting {
			return fmt.Errorf("nodemaintenances %q is being deleted: no new finalizers", name)
		}
		it.finalizers = append(it.finalizers, fin)
	case !on && has:
		it.finalizers = slices.DeleteFunc(it.finalizers, func(f string) bool { return f == fin })
		if it.nm.Deleting && len(it.finalizers) == 0 {
			delete(m.items, name)
		}
	}
	m.changed()
	return nil
}

// UpdateStatus replaces the status.
func (m *Maintenances) UpdateStatus(_ context.Context, name string, st model.MaintenanceStatus) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	it, ok := m.items[name]
	if !ok {
		return fmt.Errorf("nodemaintenances %q not found", name)
	}
	it.nm.Status = st
	m.changed()
	return nil
}

// Create adds a NodeMaintenance named after its node.
func (m *Maintenances) Create(_ context.Context, node, reason string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.items[node]; ok {
		return node, fmt.Errorf("NodeMaintenance %s already exists", node)
	}
	m.items[node] = &storedMaintenance{nm: model.NodeMaintenance{Name: node, NodeName: node, Reason: reason, Created: time.Now()}}
	m.changed()
	return node, nil
}

// Delete marks the resource deleted; with no finalizer it goes at once.
func (m *Maintenances) Delete(_ context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	it, ok := m.items[name]
	if !ok {
		return nil
	}
	if len(it.finalizers) == 0 {
		delete(m.items, name)
	} else {
		it.nm.Deleting = true
	}
	m.changed()
	return nil
}
