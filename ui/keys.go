// Package ui is drainctl's interactive view: bubbletea v1, driven by the engine's event
// stream. It never calls the Kubernetes or OpenStack client libraries; everything goes through ops.Engine.
package ui

import (
	"reflect"

	"github.com/charmbracelet/bubbles/key"
)

// Binding is a key binding that may be destructive (hidden in --readonly, confirmed first).
type Binding struct {
	key.Binding
	Dangerous bool
}

// KeyMap is every key, as data: help is generated from it.
type KeyMap struct {
	Up, Down, Top, Bottom, PageUp, PageDown Binding
	Filter, Enter, Back, Select             Binding
	Cordon, Uncordon, Evacuate, Migrate     Binding
	Abort, Rollback, ForceComplete          Binding
	Maintain, EndMaintain, Roll, Pause      Binding
	Recover                                 Binding
	Operations, Victims, Refresh, Help      Binding
	Describe, Command, Sort                 Binding
	NextOp                                  Binding
	Quit                                    Binding
	Interrupt                               Binding
	// In a confirmation.
	Confirm, Cancel, ToggleForce, ToggleEmptyDir Binding
	ToggleEviction, ToggleLastNode, ToggleCold   Binding
	ToggleFenced, ToggleDiskLoss, ToggleSkipVMs  Binding
	ToggleVMPolicy, ToggleReturnVMs              Binding
	Target, Why                                  Binding
	Exec, WaitReady                              Binding // a campaign's step at each node
	// In the quit dialog, while operations run.
	QuitWait, QuitAbort, QuitLeave Binding
}

func bind(dangerous bool, help, desc string, keys ...string) Binding {
	return Binding{Binding: key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc)), Dangerous: dangerous}
}

// DefaultKeys follows k9s habits.
func DefaultKeys() KeyMap {
	return KeyMap{
		Up:             bind(false, "↑↓/kj", "move", "up", "k"), // the footer shows it for both
		Down:           bind(false, "↓/j", "down", "down", "j"),
		Top:            bind(false, "g", "top", "g", "home"),
		Bottom:         bind(false, "G", "bottom", "G", "end"),
		PageUp:         bind(false, "pgup", "page up", "pgup", "ctrl+b"),
		PageDown:       bind(false, "pgdn", "page down", "pgdown", "ctrl+f"),
		Filter:         bind(false, "/", "filter", "/"),
		Enter:          bind(false, "enter", "details", "enter"),
		Back:           bind(false, "esc", "back", "esc"),
		Select:         bind(false, "space", "select ↓", " "), // the arrow: it moves to the next row too
		Cordon:         bind(true, "c", "cordon", "c"),
		Uncordon:       bind(true, "u", "uncordon", "u"),
		Evacuate:       bind(true, "e", "evacuate", "e"),
		Migrate:        bind(true, "m", "migrate VM", "m"),
		Abort:          bind(true, "x", "abort", "x"),
		Rollback:       bind(true, "R", "rollback", "R"),
		ForceComplete:  bind(true, "f", "force-complete", "f"),
		Maintain:       bind(true, "n", "NodeMaintenance: create", "n"),
		Recover:        bind(true, "X", "recover a dead node: fence it, rebuild its VMs and let its pods go elsewhere", "X"),
		EndMaintain:    bind(true, "N", "NodeMaintenance: delete (restore)", "N"),
		Roll:           bind(true, "C", "campaign: roll the selected nodes one by one (shows the running one)", "C"),
		Pause:          bind(false, "p", "campaign: pause after the current node / resume", "p"),
		Operations:     bind(false, "o", "operations", "o"),
		NextOp:         bind(false, "space", "next operation (operation view)", " "),
		Describe:       bind(false, "d", "describe", "d"),
		Command:        bind(false, ":", "command: "+commandHelp(), ":"),
		Sort:           bind(false, ">", "sort nodes by the next column (name, VMs, pods, RAM used, rank)", ">"),
		Victims:        bind(false, "s", "scale-down ranking", "s"),
		Refresh:        bind(false, "r", "refresh", "r"),
		Help:           bind(false, "?", "help", "?"),
		Quit:           bind(false, "q", "quit", "q"),
		Interrupt:      bind(false, "ctrl+c", "quit (in the quit dialog: at once, operations recorded)", "ctrl+c"),
		Confirm:        bind(true, "y", "run it", "y"), // y alone: one enter too many must not cordon a node
		Cancel:         bind(false, "n/esc", "cancel", "n", "esc", "q"),
		ToggleForce:    bind(true, "F", "toggle --force", "F"),
		ToggleEmptyDir: bind(true, "D", "toggle --delete-emptydir-data", "D"),
		ToggleEviction: bind(true, "E", "toggle --disable-eviction", "E"),
		ToggleLastNode: bind(true, "L", "toggle --allow-last-node", "L"),
		ToggleCold:     bind(true, "M", "toggle --cold-migrate-running (pinned VMs move cold, with downtime)", "M"),
		ToggleFenced:   bind(true, "K", "recover: toggle --confirm-fenced (your word that the dead machine is off)", "K"),
		ToggleDiskLoss: bind(true, "A", "recover: toggle --accept-disk-loss (VMs rebuilt from their image lose their local disk)", "A"),
		ToggleSkipVMs: bind(
			true,
			"S",
			"--skip-vm each VM that blocks (it stays where it is; --force's pod rules stay off); none blocking: clear",
			"S",
		),
		ToggleVMPolicy: bind(
			true,
			"O",
			"toggle --override-vm-policy for each VM whose own policy blocks (it moves anyway, as its state says)",
			"O",
		),
		ToggleReturnVMs: bind(true, "H", "toggle --return-vms: bring home the VMs that left (uncordon, campaign)", "H"),
		Target:          bind(true, "t", "migrate: pick the target host (a filterable list)", "t"),
		Why:             bind(false, "w", "type the reason (nova-compute's disabled reason, as --reason)", "w"),
		Exec:            bind(true, "!", "campaign: type --exec, run on each emptied node", "!"),
		WaitReady:       bind(true, "W", "campaign: toggle --wait-ready (each node reboots)", "W"),
		QuitWait:        bind(false, "w", "wait for them (go back)", "w", "esc"),
		QuitAbort:       bind(true, "a", "abort them (as x does), then quit", "a"),
		QuitLeave:       bind(false, "l", "leave them: stop at a safe point, recorded; rerun resumes", "l"),
	}
}

// WithoutDangerous disables every key marked Dangerous (--readonly): the flag on the binding
// is the only list.
func (k KeyMap) WithoutDangerous() KeyMap {
	for _, b := range k.all() {
		if b.Dangerous {
			b.SetEnabled(false)
		}
	}
	return k
}

// all is every binding of the map, by reflection so that a new key cannot be forgotten.
func (k *KeyMap) all() []*Binding {
	v := reflect.ValueOf(k).Elem()
	out := make([]*Binding, 0, v.NumField())
	for i := 0; i < v.NumField(); i++ {
		if b, ok := v.Field(i).Addr().Interface().(*Binding); ok {
			out = append(out, b)
		}
	}
	return out
}

// matches reports whether msg is one of the binding's keys (and the binding is enabled).
func matches(msg any, b Binding) bool {
	km, ok := msg.(interface{ String() string })
	if !ok || !b.Enabled() {
		return false
	}
	for _, k := range b.Keys() {
		if k == km.String() {
			return true
		}
	}
	return false
}

// groups is the help, by screen.
func (k KeyMap) groups() [][]Binding {
	return [][]Binding{
		{k.Up, k.Down, k.Top, k.Bottom, k.PageUp, k.PageDown, k.Filter, k.Select, k.Enter, k.Back},
		{
			k.Cordon,
			k.Evacuate,
			k.Uncordon,
			k.Migrate,
			k.Abort,
			k.Rollback,
			k.ForceComplete,
			k.Maintain,
			k.EndMaintain,
			k.Roll,
			k.Pause,
			k.Recover,
		},
		{k.Operations, k.NextOp, k.Victims, k.Describe, k.Command, k.Sort, k.Refresh, k.Help, k.Quit, k.Interrupt},
		{
			k.Confirm,
			k.Cancel,
			k.ToggleForce,
			k.ToggleEmptyDir,
			k.ToggleEviction,
			k.ToggleLastNode,
			k.ToggleCold,
			k.ToggleFenced,
			k.ToggleDiskLoss,
			k.ToggleSkipVMs,
			k.ToggleVMPolicy,
			k.ToggleReturnVMs,
			k.Target,
			k.Why,
			k.Exec,
			k.WaitReady,
		},
		{k.QuitWait, k.QuitAbort, k.QuitLeave},
	}
}
