package model

// OpRow is what a view knows of an operation's kind, one row per kind: the TUI's checks
// before it plans, its confirm pane, the verbs' arguments, a plan's summary, and a record's
// reader ask the row, never the kind. How the engine runs the kind is its own table
// (ops/traits.go).
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

var opRows = map[OpKind]OpRow{
	OpCordon:   {Exclusive: true},
	OpEvacuate: {Empties: true, Exclusive: true},
	OpRecover:  {DeadNode: true, OneNode: true, Exclusive: true},
	OpMigrate:  {OnVM: true},
	OpUncordon: {Cordoned: true},
	OpAbort:    {OneNode: true},
	OpRollback: {OneNode: true},
}

// Row is the kind's row (a kind without one, scale-down's report, has none of it).
func (k OpKind) Row() OpRow { return opRows[k] }

// Works is what the plan works on: its VM for an operation on one VM, else its node.
func (p Plan) Works() string {
	if p.Op.Row().OnVM {
		return p.VM
	}
	return p.Node
}
