package model

// OpRow is what a view knows of an operation's kind: the TUI's checks before it plans, its
// confirm pane, the verbs' arguments, a plan's summary, and a record's reader ask the row,
// never the kind. Its rows are a column of the engine's table of operations (ops.RowOf).
type OpRow struct {
	OnVM     bool // it works one VM, its target, not a node (migrate)
	Empties  bool // it empties a live node of its VMs and pods (evacuate)
	DeadNode bool // it fails a dead node over: its VMs rebuilt elsewhere (recover)
	// OneNode: it takes one node, never a batch (abort, rollback, recover).
	OneNode bool
	// Cordoned: its node must be cordoned first, or its service disabled (uncordon).
	Cordoned bool
	// Exclusive: refused while another operation of this process runs on the node.
	Exclusive bool
}
