package ui

import (
	tea "github.com/charmbracelet/bubbletea"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops"
	"github.com/drainctl/drainctl/ops/campaign"
)

// intent is what a pane's key asks the root to do: panes change their own state, the root
// does what reaches beyond a pane (another screen, the engine). The set is sealed: every
// intent is declared in this file, and the root's switch over them (apply) names each one
// (TestIntentSwitchIsExhaustive), so a new intent cannot be left unhandled.
type intent interface{ isIntent() }

// Moving between screens.
type (
	goTo       struct{ pane pane }        // a screen, or back to it (nav.go's push)
	goHome     struct{}                   // back to the nodes
	goBack     struct{}                   // to the screen this one was opened from (a dialog, a list, help)
	openDetail struct{ node, vm string }  // vm: the VM's ID the cursor starts on ("": the first row)
	describe   struct{ kind, key string } // kind: node, vm or pod
	showOps    struct{}                   // the operations screen (o, :ops)
	showOp     struct{ key string }       // one operation (a campaign's current node)
	asking     struct {                   // a yes/no question before an action with no plan
		question string
		yes      intent
	}
	answered   struct{ yes intent } // the question is answered: back, then yes (nil: no)
	showStatus struct {
		text string
		bad  bool
	}
	runCmd struct{ cmd tea.Cmd } // a pane's own Cmd (a cursor blink)
)

// Plans and their confirmation.
type (
	propose struct {
		op      model.OpKind
		targets []string
	}
	proposeMaint struct{ action, node string }
	replan       struct{ p *pending }
	replanTo     struct { // plan again with other options (a picked target host)
		p  *pending
		ro ops.RunOptions
	}
	pickTarget struct{ p *pending } // the migration's next destination (the root knows the hosts)
	runPending struct{ p *pending }
	maintain   struct{ p *pending }
	forceVM    struct{ vmID, name string }
)

// Campaigns.
type (
	proposeCampaign   struct{ targets []string }   // a campaign over the targets (C)
	reproposeCampaign struct{ o campaign.Options } // the proposal on screen, with other options
	startCampaign     struct{}
	dropCampaign      struct{}
)

// Quitting while operations run, and contexts.
type (
	quitWait      struct{}
	quitLeave     struct{}
	quitAbort     struct{}
	quitNow       struct{}
	switchContext struct{ name string }
)

func (goTo) isIntent()              {}
func (goHome) isIntent()            {}
func (goBack) isIntent()            {}
func (openDetail) isIntent()        {}
func (describe) isIntent()          {}
func (showOps) isIntent()           {}
func (showOp) isIntent()            {}
func (asking) isIntent()            {}
func (answered) isIntent()          {}
func (showStatus) isIntent()        {}
func (runCmd) isIntent()            {}
func (propose) isIntent()           {}
func (proposeMaint) isIntent()      {}
func (replan) isIntent()            {}
func (replanTo) isIntent()          {}
func (pickTarget) isIntent()        {}
func (runPending) isIntent()        {}
func (maintain) isIntent()          {}
func (forceVM) isIntent()           {}
func (proposeCampaign) isIntent()   {}
func (reproposeCampaign) isIntent() {}
func (startCampaign) isIntent()     {}
func (dropCampaign) isIntent()      {}
func (quitWait) isIntent()          {}
func (quitLeave) isIntent()         {}
func (quitAbort) isIntent()         {}
func (quitNow) isIntent()           {}
func (switchContext) isIntent()     {}
