package ops

import (
	"context"
	"time"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/opcmd"
)

// The engine's API for what works over it (ops/campaign): reads of the cluster as the
// engine sees it, its configuration, its records port, and the few writes a campaign makes
// beside the operations it runs (Plan, Run).

// RecoverConfig is the engine's [recover] configuration.
func (e *Engine) RecoverConfig() model.RecoverConfig { return e.cfg.Recover }

// Config is the engine's configuration.
func (e *Engine) Config() model.Config { return e.cfg }

// PollInterval is how often the engine polls what it waits for.
func (e *Engine) PollInterval() time.Duration { return e.o.Poll }

// Pace is how many moves the engine keeps under way at once now, within
// migrations_per_cluster, and why it last changed (pace.go).
func (e *Engine) Pace() Pace { return e.pace.state() }

// Records is the engine's records port: drainctl's own records on the cluster.
func (e *Engine) Records() RecordStore { return e.kube }

// RecordStore keeps drainctl's records (the Kube port's Record methods).
type RecordStore interface {
	Record(ctx context.Context, name string) (data []byte, found bool, err error)
	SaveRecord(ctx context.Context, name string, data []byte) error
	Records(ctx context.Context, kind string) (map[string][]byte, error)
	DeleteRecord(ctx context.Context, name string) error
}

// KubeNodes is every node as the informer cache has it.
func (e *Engine) KubeNodes() []model.KubeNode { return e.kube.Nodes() }

// KubeletHeartbeats are the renewTime of every kubelet's Lease, by node.
func (e *Engine) KubeletHeartbeats(ctx context.Context) (map[string]time.Time, error) {
	return e.kube.KubeletHeartbeats(ctx)
}

// WatchKubeletHeartbeats tells each renewal of a kubelet's Lease as it is made (a zero time:
// the Lease is gone), until ctx ends (automatic recovery counts a kubelet's silence from its
// last renewal seen).
func (e *Engine) WatchKubeletHeartbeats(ctx context.Context, renewed func(node string, renew time.Time)) error {
	return e.kube.WatchKubeletHeartbeats(ctx, renewed)
}

// PDBs is every PodDisruptionBudget as the cache has it.
func (e *Engine) PDBs() []model.PDB { return e.kube.PDBs() }

// LabelNode sets a label on the node (a campaign quarantines one it could not drain).
func (e *Engine) LabelNode(ctx context.Context, node, key, value string) error {
	return e.kube.SetLabel(ctx, node, key, value)
}

// AnnotateNode sets an annotation on the node.
func (e *Engine) AnnotateNode(ctx context.Context, node, key, value string) error {
	return e.kube.SetAnnotation(ctx, node, key, value)
}

// HoldKey takes the lease of key (not a node's) and keeps it while ctx lives: the returned
// context ends when the lease is lost; release stops keeping it.
func (e *Engine) HoldKey(ctx context.Context, key string) (context.Context, func(), error) {
	return e.holdKey(ctx, key)
}

// ReleaseKey gives back a lease HoldKey took.
func (e *Engine) ReleaseKey(ctx context.Context, key string) error {
	return e.kube.ReleaseLease(ctx, key, e.o.Holder)
}

// RunOperator runs an operator's command (a gate, a step) on the node, bounded by its
// kind's timeout.
func (e *Engine) RunOperator(ctx context.Context, kind opcmd.Kind, template, node, host string, line func(string)) error {
	return e.runOperator(ctx, kind, template, node, host, line)
}

// CPURatio is the vCPU allocation ratio the engine counts room with.
func (e *Engine) CPURatio() float64 { return e.cpuRatio() }

// PlanOn is Plan from an inventory already read: many plans from one read.
func (e *Engine) PlanOn(ctx context.Context, inv model.Inventory, op model.OpKind, target string, ro RunOptions) (model.Plan, error) {
	return e.planOn(ctx, inv, op, target, ro)
}

// RecentLiveMigrations are Nova's last n finished live migrations (none without Nova).
func (e *Engine) RecentLiveMigrations(ctx context.Context, n int) ([]model.Migration, error) {
	if e.nova == nil {
		return nil, nil
	}
	return e.nova.RecentLiveMigrations(ctx, n)
}

// Server reads one VM from Nova now (ErrNoNova without one).
func (e *Engine) Server(ctx context.Context, id string) (model.VM, error) {
	if e.nova == nil {
		return model.VM{}, ErrNoNova
	}
	return e.nova.Server(ctx, id)
}

// MigrationsOf lists the VM's moves as Nova records them, newest first.
func (e *Engine) MigrationsOf(ctx context.Context, id string) ([]model.Migration, error) {
	if e.nova == nil {
		return nil, ErrNoNova
	}
	return e.nova.MigrationsOf(ctx, id)
}

// ComputeServices is the host's nova-compute services ("": every host's; none without Nova).
func (e *Engine) ComputeServices(ctx context.Context, host string) ([]model.ComputeService, error) {
	if e.nova == nil {
		return nil, nil
	}
	return e.nova.ComputeServices(ctx, host)
}
