// Package ops is drainctl's engine: the inventory, the plans and the operations that the
// TUI, --auto and the daemons all drive. It knows nothing of the screen, and nothing of
// client-go or gophercloud either: it speaks through the small interfaces of ports.go, which
// ops/kube and ops/nova implement, so the UI can import it without pulling those in.
package ops
