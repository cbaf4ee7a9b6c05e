package model

import (
	"fmt"
	"strings"
	"time"
)

// An owner told ahead (#57.3): before drainctl moves, stops or restarts a VM, its server
// metadata says so (NoticeKey), readable from inside the guest through the metadata service,
// at least [notify] owner_lead before the act; drainctl clears it after. The notice is the
// record every process reads: a second drainctl, a daemon, a campaign that told the owners
// of its next nodes ahead all see one notice and its time.

// NoticeKey is the metadata key of drainctl's notice to a VM's owner.
const NoticeKey = "drainctl:maintenance-event"

// MoveNowKey is the metadata key of an owner's answer to a notice: "true" asks that the VM be
// moved at the next slot (under the same caps and budgets), not at the lead's end or its
// node's turn. drainctl clears it, with the notice, once it has moved the VM.
const MoveNowKey = "drainctl:move-now"

// MovesNow says whether the VM's owner asked it be moved now (MoveNowKey), as its metadata
// says; whose word is taken is the caller's to say (Honour).
func (vm VM) MovesNow() bool { return strings.EqualFold(strings.TrimSpace(vm.MoveNowAsked), "true") }

// WindowKey is the metadata key of an owner's maintenance window ("Sat 02:00-06:00
// Europe/Berlin"): a campaign with a window that overlaps it takes the VM's node in both.
const WindowKey = "drainctl:maintenance-window"

// noticeMax is Nova's limit on a metadata value (it answers 400 past it).
const noticeMax = 255

// NoticeStale: a notice whose act is this far past its time tells the owner nothing true any
// more (a campaign stopped overnight): it is told again, and the lead counted again.
const NoticeStale = 24 * time.Hour

// OwnerNotice is drainctl's notice to a VM's owner: what will be done to it, when, by whom,
// and when the owner was told.
type OwnerNotice struct {
	What string    // "live-migration", "cold-migration", "stop-start", "restart-in-place"
	At   time.Time // when the act is due: Told plus the lead
	By   string    // "campaign NAME", "evacuation of NODE"
	Told time.Time
}

// NewOwnerNotice is the notice of what is due at (at least lead from now), told now. Its
// times are whole seconds, as it is written: rounded up, so that a lead counted from it is
// never shorter than the owner had.
func NewOwnerNotice(what, by string, now, at time.Time) OwnerNotice {
	up := func(t time.Time) time.Time {
		if r := t.Truncate(time.Second); r.Before(t) {
			return r.Add(time.Second)
		}
		return t
	}
	return OwnerNotice{What: what, By: by, Told: up(now), At: up(at)}
}

// String is the notice as its metadata value: "live-migration at 2026-11-29T15:30:00Z, by
// campaign roll-1; told 2026-11-29T15:00:00Z", its By cut to fit Nova's 255 bytes.
func (n OwnerNotice) String() string {
	at, told := n.At.UTC().Format(time.RFC3339), n.Told.UTC().Format(time.RFC3339)
	by := n.By
	if room := noticeMax - len(fmt.Sprintf("%s at %s, by ; told %s", n.What, at, told)); len(by) > room {
		by = strings.ToValidUTF8(by[:max(room, 0)], "")
	}
	return fmt.Sprintf("%s at %s, by %s; told %s", n.What, at, by, told)
}

// ParseOwnerNotice reads a notice drainctl wrote; ok is false for any other value (a
// person's, a forgery that does not parse): such a value tells drainctl nothing.
func ParseOwnerNotice(s string) (OwnerNotice, bool) {
	head, told, ok := strings.Cut(s, "; told ")
	if !ok {
		return OwnerNotice{}, false
	}
	what, rest, ok := strings.Cut(head, " at ")
	if !ok {
		return OwnerNotice{}, false
	}
	at, by, ok := strings.Cut(rest, ", by ")
	if !ok {
		return OwnerNotice{}, false
	}
	n := OwnerNotice{What: what, By: by}
	var err1, err2 error
	n.At, err1 = time.Parse(time.RFC3339, at)
	n.Told, err2 = time.Parse(time.RFC3339, told)
	if err1 != nil || err2 != nil || n.What == "" || n.At.Before(n.Told) {
		return OwnerNotice{}, false
	}
	return n, true
}

// Due says whether the notice, as its VM's metadata shows it now, lets the act go ahead: told
// at least lead ago, for an act not long past its time. wait is how long until it does; told
// again (stale) when the notice is too old to be true.
func (n OwnerNotice) Due(now time.Time, lead time.Duration) (due bool, wait time.Duration, stale bool) {
	if now.After(n.At.Add(NoticeStale)) || n.Told.After(now.Add(lead)) { // long past, or told "in the future": a forgery
		return false, 0, true
	}
	if left := n.Told.Add(lead).Sub(now); left > 0 {
		return false, left, false
	}
	return true, 0, false
}
