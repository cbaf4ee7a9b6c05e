package model

import "time"

// Notice is an event a person on call must know: the [notify] webhook posts each as one JSON
// object, and the in-cluster modes count them as metrics.
type Notice struct {
	Kind     NoticeKind `json:"kind"`
	Node     string     `json:"node,omitempty"`
	Campaign string     `json:"campaign,omitempty"`
	// VM and Project: a VM's owner told ahead (maintenance-event), for its project's webhook.
	VM      string `json:"vm,omitempty"`
	Project string `json:"project,omitempty"`
	// Maintenance names the act an owner is told of, opaquely: a tenant is told what and when,
	// never the cloud's host nor the campaign's name (OpenStack hides hosts from tenants).
	Maintenance string    `json:"maintenance,omitempty"`
	Message     string    `json:"message"`
	At          time.Time `json:"at"`
	// Ledger is a recovery's ledger in counts (recovery-done, recovery-failed).
	Ledger *LedgerCounts `json:"ledger,omitempty"`
	// VMsRunningAfter is the time from the node's NotReady to every VM the recovery rebuilt
	// running elsewhere (recovery-done, when none failed; a VM left is in the ledger).
	VMsRunningAfter time.Duration `json:"vmsRunningAfterNs,omitempty"`
}

// NoticeKind says what happened.
type NoticeKind string

// The notices.
const (
	NoticeStorm           NoticeKind = "storm"            // too many nodes unhealthy: nothing is fenced
	NoticeRecoveryStarted NoticeKind = "recovery-started" // a dead node's recovery began (its proof of death)
	NoticeRecoveryDone    NoticeKind = "recovery-done"    // its VMs rebuilt elsewhere, its pods let go
	NoticeRecoveryFailed  NoticeKind = "recovery-failed"  // it stopped: Message says where and why
	NoticeRecoveryRefused NoticeKind = "recovery-refused" // its plan is blocked: nothing changed
	NoticeFenceFailed     NoticeKind = "fence-failed"     // the ladder stopped before anything was rebuilt
	NoticeVMNotRebuilt    NoticeKind = "vm-not-rebuilt"   // a VM of a dead host stays there: Message says why
	NoticeCampaignStarted NoticeKind = "campaign-started" // a campaign's first node began
	// a campaign's node still draining past its --node-deadline
	NoticeNodePastDeadline NoticeKind = "campaign-node-past-deadline"
	NoticeNodeQuarantined  NoticeKind = "campaign-node-quarantined"    // rolled back and labelled, the campaign goes on
	NoticeNodeHeldByOwners NoticeKind = "campaign-node-held-by-owners" // skipped: its VMs' owners asked them to stay
	NoticeCampaignFinished NoticeKind = "campaign-finished"            // done, failed or stopped: Message says which
	// A VM's owner told ahead in its metadata ([notify] owner_lead): Message is the notice,
	// posted to its project's own webhook ([notify.projects]).
	NoticeMaintenanceEvent NoticeKind = "maintenance-event"
	// [proactive]: a node's conditions say it is degrading (told, or its action begins).
	NoticeDegrading        NoticeKind = "node-degrading"
	NoticeProactiveDone    NoticeKind = "proactive-done"    // [proactive]'s action on a degrading node done
	NoticeProactiveFailed  NoticeKind = "proactive-failed"  // it failed: a person's now
	NoticeProactiveRefused NoticeKind = "proactive-refused" // it was refused (nothing changed): tried again
	// The webhook's own failure: never posted, said where drainctl runs.
	NoticeWebhookFailed NoticeKind = "webhook-failed"
)

// LedgerCounts are a recovery's moves by how they ended.
type LedgerCounts struct {
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Left      int `json:"left"`    // stays, with its reason (a local disk a rebuild would lose)
	Pending   int `json:"pending"` // not reached: the recovery stopped first
}
