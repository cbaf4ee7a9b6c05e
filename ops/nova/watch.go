package nova

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"

	"github.com/drainctl/drainctl/model"
	"github.com/drainctl/drainctl/ops/shared"
)

// One server read, shared by the fleet. A step about to act on a VM reads it first (has it
// left its host, started migrating, stopped?), and a live move's end reads it to see it on its
// new host: one GET each, two a VM moved. Here every such read asks the process's one read of
// what changed in the cloud (servers/detail, changes-since), begun after it asked and shared by
// every read asking at once: a VM the process read since the watch began (alone, in its host's
// list, or changed), and which that read does not show changed, is as it was read. So the answer
// is still the world after the ask (prove before acting), at one request a gap for the fleet,
// not one a VM. A host listed since the watch began is listed so too for a step that works its
// VMs (HostServers); the proof that a host is empty still lists it (Servers).
//
// What keeps it true: the changes are read from a mark on Nova's own clock (the Date of the
// read that began the watch, then the newest updated_at seen), less watchMargin for the
// clocks of Nova's hosts that stamp updated_at; a VM is answered from the watch only when the
// read that gave it began after the watch did; a read of what changed that fails ends the
// watch (the next read of a VM begins another); and every watchFor the watch begins again
// anyway. A VM the watch does not know, or saw deleted, is read alone, as before.

// watchMargin is how far before the newest updated_at seen (and before the Date that began the
// watch) the next read of what changed begins: Nova stores updated_at to the second, and its
// conductors' clocks (which stamp it) drift by less.
const watchMargin = 2 * time.Second

// watchStartMargin is watchMargin for the watch's first read: the Date of the answer that began
// it came a request's time after Nova read the VM.
const watchStartMargin = 5 * time.Second

// watchFor is how long a watch lasts before the next read of a VM begins another.
const watchFor = 2 * time.Minute

// watch is the servers the process read since it began, as the reads of what changed keep them.
type watch struct {
	calls *shared.Calls[changedServers] // readChangedServers, shared and paced (made in Connect)

	mu      sync.Mutex
	epoch   int       // which watch; a read made for an earlier one is not used
	began   time.Time // the watch's first read began (local clock); zero: no watch
	mark    time.Time // the next read of what changed asks for changes at or after it (Nova's clock)
	servers map[string]watched
	hosts   map[string]bool // the hosts whose servers were listed since the watch began
}

// watched is a server as the latest read that showed it, and when that read began.
type watched struct {
	vm          model.VM
	deleted     bool
	portsUnread bool // first seen changed, its direct ports unread (Neutron in the catalog)
	read        time.Time
}

// changedServers is one read of what changed, for the watch it was made for.
type changedServers struct{ epoch int }

// Server reads one server: from the watch when it knows the VM, else alone.
func (c *Client) Server(ctx context.Context, id string) (model.VM, error) {
	if vm, ok := c.watchedServer(ctx, id); ok {
		return vm, nil
	}
	return c.serverAlone(ctx, id)
}

// watchedServer is the server as a read of what changed, begun after the call, leaves it; false
// when the watch does not know it (then it is read alone).
func (c *Client) watchedServer(ctx context.Context, id string) (model.VM, bool) {
	w := &c.watch
	w.mu.Lock()
	on := !w.began.IsZero() && time.Since(w.began) < watchFor
	_, known := w.servers[id]
	w.mu.Unlock()
	if !on || !known {
		return model.VM{}, false
	}
	read, err := w.calls.Do(ctx)
	if err != nil {
		return model.VM{}, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.servers[id]
	if read.epoch != w.epoch || !ok || s.deleted || s.portsUnread {
		return model.VM{}, false
	}
	return s.vm, true
}

// HostServers lists a host's servers for a step that works them (the VMs to move, those that
// arrived): from the watch when it holds the host's list (listed since the watch began, every
// change since read), else as Servers. Not for the proof that a host is empty: a server just
// made has no updated_at until its first change, and a read of what changed does not show it.
func (c *Client) HostServers(ctx context.Context, host string) ([]model.VM, error) {
	if vms, ok := c.watchedHost(ctx, host); ok {
		return vms, nil
	}
	return c.Servers(ctx, host)
}

// watchedHost is host's servers as a read of what changed, begun after the call, leaves them
// (a server first seen changed has its direct ports read here); false when the watch does not
// hold the host's list.
func (c *Client) watchedHost(ctx context.Context, host string) ([]model.VM, bool) {
	w := &c.watch
	w.mu.Lock()
	on := !w.began.IsZero() && time.Since(w.began) < watchFor && w.hosts[host]
	w.mu.Unlock()
	if !on {
		return nil, false
	}
	read, err := w.calls.Do(ctx)
	if err != nil {
		return nil, false
	}
	w.mu.Lock()
	if read.epoch != w.epoch {
		w.mu.Unlock()
		return nil, false
	}
	var out []model.VM
	var unread []string
	for _, s := range w.servers {
		if s.deleted || s.vm.Host != host {
			continue
		}
		if s.portsUnread {
			unread = append(unread, s.vm.ID)
		}
		out = append(out, s.vm)
	}
	w.mu.Unlock()
	if len(unread) > 0 { // arrived since the host was listed: their direct ports, as a list reads them
		pinByPorts(out, c.directPorts(ctx, unread...))
	}
	slices.SortFunc(out, func(a, b model.VM) int { return strings.Compare(a.ID, b.ID) })
	return out, true
}

// serverAlone reads one server, its direct ports too, and begins a watch when none runs.
func (c *Client) serverAlone(ctx context.Context, id string) (model.VM, error) {
	var body struct {
		Server wireServer `json:"server"`
	}
	began := time.Now()
	resp, err := c.compute.Get(ctx, c.compute.ServiceURL("servers", id), &body, nil)
	if err != nil {
		return model.VM{}, fmt.Errorf("reading server %s: %w", id, describe(err))
	}
	if !body.Server.Host.Shown {
		return model.VM{}, ErrHostsHidden
	}
	vm := []model.VM{body.Server.model()}
	pinByPorts(vm, c.directPorts(ctx, id))
	if date, err := http.ParseTime(resp.Header.Get("Date")); err == nil {
		c.watch.begin(began, date)
	}
	c.watch.keep("", vm, began)
	return vm[0], nil
}

// begin begins a watch when none runs (or the last one is done): its first read of what changed
// asks from the Date of an answer to a read begun at began.
func (w *watch) begin(began, date time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.began.IsZero() && time.Since(w.began) < watchFor {
		return
	}
	w.epoch++
	w.began, w.mark, w.servers, w.hosts = began, date.Add(-watchStartMargin), map[string]watched{}, map[string]bool{}
}

// keep puts what a read begun at began showed into the watch (one server; with host, that
// host's whole list, which the watch then holds): only a read begun after the watch did, and
// newer than what it holds.
func (w *watch) keep(host string, vms []model.VM, began time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.began.IsZero() || began.Before(w.began) {
		return
	}
	for _, vm := range vms {
		if was, ok := w.servers[vm.ID]; !ok || was.read.Before(began) {
			w.servers[vm.ID] = watched{vm: vm, read: began}
		}
	}
	if host != "" {
		w.hosts[host] = true
	}
}

// end ends the watch of epoch (a read of what changed failed: a change may be unseen).
func (w *watch) end(epoch int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.epoch == epoch {
		w.began, w.servers, w.hosts = time.Time{}, nil, nil
	}
}

// readChangedServers reads the servers changed since the watch's mark (every project; the
// deleted ones come too) and keeps the ones the watch knows as they are now.
func (c *Client) readChangedServers(ctx context.Context) (changedServers, error) {
	w := &c.watch
	w.mu.Lock()
	epoch, mark := w.epoch, w.mark
	w.mu.Unlock()
	began := time.Now()
	var changed []wireServer
	err := c.eachServer(ctx, servers.ListOpts{AllTenants: true, ChangesSince: mark.UTC().Format("2006-01-02T15:04:05"), Limit: c.pageSize},
		func(s wireServer) { changed = append(changed, s) })
	if err != nil {
		w.end(epoch)
		return changedServers{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.epoch != epoch {
		return changedServers{epoch: epoch}, nil
	}
	for _, s := range changed {
		if t, err := time.Parse(time.RFC3339, s.Updated); err == nil && t.Add(-watchMargin).After(w.mark) {
			w.mark = t.Add(-watchMargin)
		}
		was, ok := w.servers[s.ID]
		if ok && !was.read.Before(began) {
			continue // a read begun later showed it
		}
		vm := s.model()
		if vm.Pinned == "" {
			vm.Pinned = was.vm.Pinned // a direct port seen by the read that began the VM's watch
		}
		w.servers[s.ID] = watched{
			vm:          vm,
			deleted:     deletedStatus(s.Status),
			portsUnread: c.network != nil && (!ok || was.portsUnread), // read alone when asked
			read:        began,
		}
	}
	return changedServers{epoch: epoch}, nil
}
