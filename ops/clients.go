package ops

import (
	"context"
	"fmt"
	"time"

	"github.com/drainctl/drainctl/model"
)

// Kube is what the engine needs from Kubernetes (ops/kube.Client). Reads come from the
// informer cache; every write is idempotent at the call site (the engine checks first).
type Kube interface {
	KubeSource
	// Node and PodsOn read the cache.
	Node(name string) (model.KubeNode, bool)
	PodsOn(node string) []model.Pod
	PDB(namespace, name string) (model.PDB, bool)
	PodUID(namespace, name string) (string, bool)

	// Cordon makes the node unschedulable and adds the taint; Uncordon undoes both.
	Cordon(ctx context.Context, node string, taint model.Taint) error
	Uncordon(ctx context.Context, node string, taintKey string) error
	// SetAnnotation sets a node annotation; an empty value removes it.
	SetAnnotation(ctx context.Context, node, key, value string) error
	// Evict asks the Eviction API (or deletes, with useDelete) to remove the pod with that UID.
	// A PDB refusal is a *BudgetError; a pod already gone is nil.
	Evict(ctx context.Context, pod model.Pod, grace *int64, useDelete bool) error
	// PodsForDeletion asks kubectl's drain filters which pods of the node to remove; refusals
	// come back as errors in kubectl's words.
	PodsForDeletion(ctx context.Context, node string, o DrainFilterOptions, extra func(model.Pod) (keep bool)) ([]model.Pod, []error, error)

	// AcquireLease takes the node's maintenance lease for holder; held by another live
	// holder, it fails with *LeaseHeldError.
	AcquireLease(ctx context.Context, node, holder string, ttl time.Duration) error
	ReleaseLease(ctx context.Context, node, holder string) error
	// DeleteNode deletes the Node object (scale-down).
	DeleteNode(ctx context.Context, node string) error
}

// MachinePool terminates the machine under a node (ops/cloudpool.Client).
type MachinePool interface {
	TerminateNode(ctx context.Context, node, providerID string) (machineID string, err error)
}

// DrainFilterOptions are kubectl drain's own options.
type DrainFilterOptions struct {
	Force, IgnoreDaemonSets, DeleteEmptyDirData bool
}

// Nova is what the engine needs from Nova (ops/nova.Client).
type Nova interface {
	NovaSource
	ComputeServices(ctx context.Context, host string) ([]model.ComputeService, error)
	Hypervisors(ctx context.Context) ([]model.Hypervisor, error)
	SetServiceEnabled(ctx context.Context, host string, enabled bool, reason string) (model.ComputeService, error)
	Servers(ctx context.Context, host string) ([]model.VM, error)
	Server(ctx context.Context, id string) (model.VM, error)
	LiveMigrate(ctx context.Context, id, host string) error
	ServerMigrations(ctx context.Context, id string) ([]model.Migration, error)
	MigrationsOf(ctx context.Context, id string) ([]model.Migration, error)
	InProgressFrom(ctx context.Context, host string) ([]model.Migration, error)
	ForceComplete(ctx context.Context, id string, migrationID int64) error
	AbortMigration(ctx context.Context, id string, migrationID int64) error
	LastActionError(ctx context.Context, id, action string) (string, error)
}

// BudgetError is an eviction refused because a PodDisruptionBudget allows no disruption.
type BudgetError struct {
	Pod     string
	PDB     string // "" when the API did not say which
	Message string
}

func (e *BudgetError) Error() string {
	if e.PDB != "" {
		return fmt.Sprintf("evicting %s would violate PodDisruptionBudget %s: %s", e.Pod, e.PDB, e.Message)
	}
	return fmt.Sprintf("evicting %s would violate its PodDisruptionBudget: %s", e.Pod, e.Message)
}

// LeaseHeldError means another actor is working on the node.
type LeaseHeldError struct {
	Node, Holder string
	Until        time.Time
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("node %s is held by %s (lease valid until %s)", e.Node, e.Holder, e.Until.Format(time.RFC3339))
}

// ExitCode: another actor holding the node is a policy refusal; nothing was changed.
func (e *LeaseHeldError) ExitCode() int { return ExitRefused }
