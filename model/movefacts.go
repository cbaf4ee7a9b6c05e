package model

// MoveFacts are what the house reads of one way a VM is handled, a row of the engine's
// movers (ops.MoveFactsOf): a plan's words, a view's row, a controller's count, a metric.
// A view asks the row, never which method it is.
type MoveFacts struct {
	// Leaves: the VM leaves its host (live, cold, rebuild, someone's move followed); its
	// room is counted where it goes.
	Leaves bool
	// Stays: it cannot or may not move; it is left on the node, a typed reason says why.
	Stays bool
	// InPlace: it is stopped on its host before the node's step and started there again
	// when the node returns (restart-in-place).
	InPlace bool
	// Copies: its progress is memory copied, in bytes: a live migration, the one the
	// metrics count.
	Copies bool
	// Default: every VM moves so unless its state or its policy says otherwise; a plan
	// lists a VM handled any other way.
	Default bool
	// Named: a progress line names it ("vm db-1 (cold) completed"): its states do not say it.
	Named bool
	// Notice is what its owner's notice calls the act ("": its owner is not told).
	Notice string
	// Pane is what its row on the operation pane shows, and Word the words of PaneWord.
	Pane MovePane
	Word string
}

// MovePane is what a VM's row on the operation pane shows for its move.
type MovePane int

// The panes' rows.
const (
	PaneBytes     MovePane = iota // a bar of the memory copied
	PaneColdSteps                 // the cold move's step, of Nova's steps (ColdSteps)
	PaneRebuild                   // the rebuild's state: it copies nothing
	PaneWord                      // its Word: it goes nowhere
)
