package sim

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// DemoOptions size the generated cluster.
type DemoOptions struct {
	Nodes int     // total nodes, default 12; up to 5,000 for benchmarks
	Seed  int64   // same seed, same cluster
	Scale float64 // simulated seconds per real second (default 1)
	// PodsPerNode and VMsPerNode, when set, fill each compute node to that level
	// (benchmarks: 30 and 10 make 150,000 pods and 50,000 VMs at 5,000 nodes).
	PodsPerNode int
	VMsPerNode  int
	// MigrationsPerSource is Nova's max_concurrent_live_migrations (default 1).
	MigrationsPerSource int
}

// Demo is a running simulated cluster: Nova and Keystone on a local port, Kubernetes behind
// a clientset.
type Demo struct {
	World *World
	Nova  *Server
	Kube  *Kube
	// Names of the nodes with something to show.
	ControlPlane []string
	Computes     []string
	Storage      []string
}

// The demo cloud's canary image (a CirrOS), flavor and network ([return] in the demo).
const (
	DemoCanaryImage   = "0d5ea7a1-c1a2-4c0e-9a7e-3f1c2b6d8e01"
	DemoCanaryFlavor  = "c1.tiny"
	DemoCanaryNetwork = "b1b2c3d4-0000-4000-8000-00000000000a"
)

// firstOn is the name of the first server on host, by name ("" when none).
func (w *World) firstOn(host string) string {
	if names := w.namesOn(host); len(names) > 0 {
		return names[0]
	}
	return ""
}

// namesOn are the names of the servers on host, in order.
func (w *World) namesOn(host string) []string {
	var names []string
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.servers {
		if s.Host == host {
			names = append(names, s.Name)
		}
	}
	slices.Sort(names)
	return names
}

// Close stops the servers and pending simulated work.
func (d *Demo) Close() {
	d.Kube.Stop()
	d.Nova.Close()
}

var flavors = []Flavor{
	{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20},
	{Name: "m1.medium", RAMMB: 4096, VCPUs: 2, DiskGB: 40},
	{Name: "m1.large", RAMMB: 8192, VCPUs: 4, DiskGB: 80},
	{Name: "m1.xlarge", RAMMB: 16384, VCPUs: 8, DiskGB: 160},
}

// StartDemo generates the demo world and serves its Nova side on 127.0.0.1.
//
// The default world (12 nodes) has: three control-plane nodes, one storage node with no
// nova-compute, eight compute nodes each running nova-compute and libvirt as DaemonSet pods;
// Deployments under PDBs, a StatefulSet, a bare pod, a pod with emptyDir data; a node
// annotated scale-down-disabled; VMs of four flavors, one that converges slowly, one whose
// first migration fails, a stopped one, one passing a GPU through, a broken one; and one
// compute service already disabled by someone else.
func StartDemo(o DemoOptions) (*Demo, error) {
	if o.Nodes <= 0 {
		o.Nodes = 12
	}
	if o.Scale <= 0 {
		o.Scale = 1
	}
	rng := rand.New(rand.NewSource(o.Seed))
	w := NewWorld(Options{Seed: o.Seed, Scale: o.Scale, MaxConcurrentLiveMigrations: o.MigrationsPerSource})
	d := &Demo{World: w}

	ncp := 3
	if o.Nodes < 6 {
		ncp = 1
	}
	nstorage := 0
	if o.Nodes >= 10 {
		nstorage = 1
	}
	ncompute := o.Nodes - ncp - nstorage
	if ncompute < 2 {
		return nil, fmt.Errorf("a demo needs at least %d nodes", ncp+nstorage+2)
	}
	var objs []runtime.Object
	created := metav1.NewTime(w.clock.Now().Add(-30 * 24 * time.Hour))
	for i := 0; i < ncp; i++ {
		name := fmt.Sprintf("cp-%d", i)
		d.ControlPlane = append(d.ControlPlane, name)
		n := demoNode(name, created, "control-plane")
		n.Spec.Taints = []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}
		objs = append(objs, n)
	}
	for i := 0; i < nstorage; i++ {
		name := fmt.Sprintf("storage-%d", i)
		d.Storage = append(d.Storage, name)
		objs = append(objs, demoNode(name, created, "storage"))
	}
	width := len(fmt.Sprint(ncompute - 1))
	for i := 0; i < ncompute; i++ {
		name := fmt.Sprintf("compute-%0*d", width, i)
		d.Computes = append(d.Computes, name)
		n := demoNode(name, created, "compute")
		n.Labels["rack"] = fmt.Sprintf("r%d", i/4+1) // four to a rack: --auto roll --selector rack=r1
		if i == ncompute-1 {
			n.Annotations["cluster-autoscaler.kubernetes.io/scale-down-disabled"] = "true"
		}
		objs = append(objs, n)
		w.AddHost(name, 64, 262144, 2000)
	}

	// Namespaces, controllers and their pods.
	objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "openstack"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}})
	g := &podGen{rng: rng, created: created}
	for _, ds := range []struct{ ns, name, app string }{{"openstack", "nova-compute", "nova"}, {"openstack", "libvirt", "libvirt"}} {
		obj := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ds.ns, Name: ds.name, UID: g.uid()}}
		objs = append(objs, obj)
		for _, node := range d.Computes {
			objs = append(objs, g.pod(ds.ns, ds.name+"-"+g.suffix(), node, "DaemonSet", ds.name, obj.UID,
				map[string]string{"application": ds.app}, "250m", "512Mi"))
		}
	}
	kp := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-proxy", UID: g.uid()}}
	objs = append(objs, kp)
	for _, node := range append(append(append([]string{}, d.ControlPlane...), d.Storage...), d.Computes...) {
		p := g.pod(
			"kube-system",
			"kube-proxy-"+g.suffix(),
			node,
			"DaemonSet",
			"kube-proxy",
			kp.UID,
			map[string]string{"k8s-app": "kube-proxy"},
			"100m",
			"128Mi",
		)
		p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		objs = append(objs, p)
	}
	// Deployments spread over the computes, each under a PDB.
	deployments := []struct {
		name     string
		replicas int
		pdb      func(int) *policyv1.PodDisruptionBudgetSpec
		cpu, mem string
	}{
		{"web", ncompute, func(n int) *policyv1.PodDisruptionBudgetSpec {
			return &policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(int32(n - 1)))}
		}, "500m", "1Gi"},
		{"api", max(2, ncompute/2), func(int) *policyv1.PodDisruptionBudgetSpec {
			return &policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1))}
		}, "1", "2Gi"},
		{"worker", ncompute * 2, nil, "250m", "512Mi"},
	}
	if o.PodsPerNode > 0 {
		deployments = append(deployments, struct {
			name     string
			replicas int
			pdb      func(int) *policyv1.PodDisruptionBudgetSpec
			cpu, mem string
		}{"batch", ncompute * max(0, o.PodsPerNode-6), nil, "50m", "64Mi"})
	}
	for _, dep := range deployments {
		sel := map[string]string{"app": dep.name}
		dobj := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: dep.name, UID: g.uid()},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(dep.replicas)), Selector: &metav1.LabelSelector{MatchLabels: sel}}}
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: dep.name + "-7c9f8d6b5", UID: g.uid(),
			OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "apps/v1", Kind: "Deployment", Name: dep.name, UID: dobj.UID, Controller: ptr.To(true)},
			}},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(dep.replicas)), Selector: &metav1.LabelSelector{MatchLabels: sel}}}
		objs = append(objs, dobj, rs)
		if dep.pdb != nil {
			spec := dep.pdb(dep.replicas)
			spec.Selector = &metav1.LabelSelector{MatchLabels: sel}
			objs = append(
				objs,
				&policyv1.PodDisruptionBudget{
					ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: dep.name + "-pdb", Generation: 1},
					Spec:       *spec,
				},
			)
		}
		for r := 0; r < dep.replicas; r++ {
			node := d.Computes[r%ncompute]
			objs = append(
				objs,
				g.pod(
					"shop",
					rs.Name+"-"+g.suffix(),
					node,
					"ReplicaSet",
					rs.Name,
					rs.UID,
					map[string]string{"app": dep.name},
					dep.cpu,
					dep.mem,
				),
			)
		}
	}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db", UID: g.uid()}}
	objs = append(objs, sts)
	for r := 0; r < 3; r++ {
		objs = append(
			objs,
			g.pod(
				"shop",
				fmt.Sprintf("db-%d", r),
				d.Computes[(r*3+1)%ncompute],
				"StatefulSet",
				"db",
				sts.UID,
				map[string]string{"app": "db"},
				"1",
				"4Gi",
			),
		)
	}
	objs = append(objs, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db-pdb", Generation: 1},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
		}})
	objs = append(objs, g.pod("shop", "debug-shell", d.Computes[0], "", "", "", map[string]string{"run": "debug-shell"}, "100m", "64Mi"))
	cache := g.pod("shop", "cache-0", d.Computes[1%ncompute], "", "", "", map[string]string{"app": "cache"}, "100m", "256Mi")
	cache.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	objs = append(objs, cache)
	for _, cp := range d.ControlPlane {
		p := g.pod(
			"kube-system",
			"kube-apiserver-"+cp,
			cp,
			"Node",
			cp,
			"",
			map[string]string{"component": "kube-apiserver"},
			"250m",
			"512Mi",
		)
		p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "mirror"}
		objs = append(objs, p)
	}

	// VMs: a few per compute, of several flavors.
	vmIndex := 0
	var onVolumes []*VM // a third of the VMs boot from a volume: a dead host's rebuild keeps their disks
	for i, host := range d.Computes {
		n := 3 + rng.Intn(4)
		if o.VMsPerNode > 0 {
			n = o.VMsPerNode
		}
		if i == ncompute-1 && o.VMsPerNode == 0 {
			n = 1
		}
		for j := 0; j < n; j++ {
			f := flavors[rng.Intn(len(flavors))]
			vm := w.AddServer(fmt.Sprintf("vm-%04d", vmIndex), host, f)
			if vmIndex%3 == 1 {
				onVolumes = append(onVolumes, vm)
			}
			vmIndex++
		}
	}
	slow := w.AddServer("analytics-big", d.Computes[1%ncompute], Flavor{Name: "m1.2xlarge", RAMMB: 32768, VCPUs: 16, DiskGB: 320})
	flaky := w.AddServer("legacy-erp", d.Computes[2%ncompute], Flavor{Name: "m1.large", RAMMB: 8192, VCPUs: 4, DiskGB: 80})
	// Every state a real host carries, on one host of rack r1 beside the flaky VM: a stopped
	// VM (moves cold), a VM passing a GPU through (cannot live-migrate: M moves it cold, with
	// downtime) and a broken one (ERROR: stays; F or --skip-vm leaves it).
	w.AddServer("reports-nightly", d.Computes[2%ncompute], Flavor{Name: "m1.medium", RAMMB: 4096, VCPUs: 2, DiskGB: 40})
	w.AddServer("ml-train-0", d.Computes[2%ncompute], Flavor{Name: "g1.a100", RAMMB: 65536, VCPUs: 16, DiskGB: 200,
		ExtraSpecs: map[string]string{"pci_passthrough:alias": "a100:1", "hw:cpu_policy": "dedicated"}})
	w.AddServer("build-old", d.Computes[2%ncompute], Flavor{Name: "m1.small", RAMMB: 2048, VCPUs: 1, DiskGB: 20})
	w.Stop("reports-nightly")
	// Its owner locked it against their own mistakes: an admin's evacuation moves it, the lock kept.
	w.Lock("analytics-big")
	// A hard anti-affinity group across three hosts of rack r1: each member moves only to a
	// host without another one (the plan and the ranking count it).
	w.AddServerGroup("erp-ha", "anti-affinity", "vm-0000", "analytics-big", "legacy-erp")
	w.Break("build-old", "Failed to allocate the network(s), not rescheduling.")
	// Each maintenance policy a VM's owner may ask for (drainctl:maintenance): migrate on a VM
	// of compute-0, stop-start on one of compute-6 and restart-in-place on one of compute-7 (in
	// rack r2's campaign), and a database asking to stay beside the other states on rack r1's
	// host (--skip-vm ledger-db leaves it, --override-vm-policy ledger-db moves it).
	w.AddServer("ledger-db", d.Computes[2%ncompute], Flavor{Name: "m1.medium", RAMMB: 4096, VCPUs: 2, DiskGB: 40})
	w.SetMetadata("ledger-db", "drainctl:maintenance", "stays")
	for host, policy := range map[int]string{0: "migrate", 6: "stop-start", 7: "restart-in-place"} {
		if host < len(d.Computes) {
			if vm := w.firstOn(d.Computes[host]); vm != "" {
				w.SetMetadata(vm, "drainctl:maintenance", policy)
			}
		}
	}
	// The owners' other words, to try without a cloud: a group of two VMs kept whole
	// (drainctl:group, at most one disrupted at once: a campaign emptying compute-3 and
	// compute-4 together moves them one after the other), and a maintenance window asked of a
	// VM of compute-8 (a campaign with a window takes its node after the others).
	for _, host := range []int{3, 4} {
		if host < len(d.Computes) {
			if vm := w.firstOn(d.Computes[host]); vm != "" {
				w.SetMetadata(vm, "drainctl:group", "orders")
				w.SetMetadata(vm, "drainctl:max-disrupted", "1")
			}
		}
	}
	// An owner who answered a notice ahead (drainctl:move-now): with [notify] owner_lead set,
	// an evacuation of compute-1 moves this VM at once while the others wait out the lead.
	if len(d.Computes) > 1 {
		if names := w.namesOn(d.Computes[1]); len(names) > 1 { // its first is analytics-big, locked
			w.SetMetadata(names[len(names)-1], "drainctl:move-now", "true")
		}
	}
	if len(d.Computes) > 8 {
		if vm := w.firstOn(d.Computes[8]); vm != "" {
			w.SetMetadata(vm, "drainctl:maintenance-window", "Sat 02:00-06:00 Europe/Berlin")
		}
	}
	// What a returning host's canary boots with ([return]; the demo turns the canary on).
	w.AddImage(DemoCanaryImage)
	w.AddFlavor(DemoCanaryFlavor, Flavor{Name: DemoCanaryFlavor, RAMMB: 256, VCPUs: 1, DiskGB: 1})
	w.AddNetwork(DemoCanaryNetwork)
	w.Update(func(hosts map[string]*Host, _ map[string]*VM) {
		slow.DirtyBytesPerSec = 0.85 * float64(w.opts.BandwidthBytesPerSec) // converges, slowly
		flaky.FailAt, flaky.FailOnce = "running", true
		for _, vm := range onVolumes {
			vm.VolumeBacked = true
		}
		if len(d.Computes) > 5 {
			h := hosts[d.Computes[5]]
			h.Enabled, h.DisabledReason = false, "hardware ticket #4411: DIMM errors (alice)"
		}
	})

	d.Kube = NewKube(w.clock, objs...)
	srv, err := Serve(w, "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	d.Nova = srv
	return d, nil
}

func demoNode(name string, created metav1.Time, role string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: created, UID: typesUID("node-" + name),
			Labels:      map[string]string{"kubernetes.io/hostname": name, "node-role.kubernetes.io/" + role: ""},
			Annotations: map[string]string{}},
		Spec: corev1.NodeSpec{ProviderID: "openstack:///" + name},
		Status: corev1.NodeStatus{
			Capacity: corev1.ResourceList{
				"cpu":    resource.MustParse("64"),
				"memory": resource.MustParse("256Gi"),
				"pods":   resource.MustParse("110"),
			},
			Allocatable: corev1.ResourceList{
				"cpu":    resource.MustParse("62"),
				"memory": resource.MustParse("250Gi"),
				"pods":   resource.MustParse("110"),
			},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: created}},
		},
	}
}

type podGen struct {
	rng     *rand.Rand
	created metav1.Time
	n       int
}

func (g *podGen) uid() typesUIDAlias {
	g.n++
	return typesUID(fmt.Sprintf("00000000-0000-4000-8000-%012d", g.n))
}

func (g *podGen) suffix() string {
	g.n++
	return randSuffix(g.n)
}

func (g *podGen) pod(
	ns, name, node, ownerKind, ownerName string,
	ownerUID typesUIDAlias,
	labels map[string]string,
	cpu, mem string,
) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: g.uid(), Labels: labels, CreationTimestamp: g.created},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: ptr.To[int64](5),
			Containers: []corev1.Container{{Name: "main", Image: "registry.example/" + ns + "/" + name,
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{"cpu": resource.MustParse(cpu), "memory": resource.MustParse(mem)},
				}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: g.created}}},
	}
	if ownerKind != "" {
		apiVersion := "apps/v1"
		if ownerKind == "Node" {
			apiVersion = "v1"
		}
		p.OwnerReferences = []metav1.OwnerReference{
			{APIVersion: apiVersion, Kind: ownerKind, Name: ownerName, UID: ownerUID, Controller: ptr.To(true)},
		}
	}
	return p
}

// KillHost makes a demo node's machine die: its nova-compute stops reporting, its Node
// goes NotReady (both layers at once, as a power loss does).
func (d *Demo) KillHost(node string) error {
	if !slices.Contains(d.Computes, node) {
		return fmt.Errorf("no compute node %q in the demo (the compute nodes are: %s)", node, strings.Join(d.Computes, ", "))
	}
	d.World.KillHost(node)
	return d.Kube.SetNodeReady(node, false)
}

// SetCondition gives a demo node the condition typ, True (a degrading host, as
// node-problem-detector would report it: [proactive]), or clears it with on false.
func (d *Demo) SetCondition(node, typ string, on bool) error {
	if !slices.Contains(d.Computes, node) {
		return fmt.Errorf("no compute node %q in the demo (the compute nodes are: %s)", node, strings.Join(d.Computes, ", "))
	}
	return d.Kube.SetNodeCondition(node, typ, on)
}

// DemoReserveLabel is the demo's [recover] reserve_label.
const DemoReserveLabel = "node-restriction.kubernetes.io/drainctl-failover-reserve"

// SetReserve labels a demo node the failover reserve (or takes the label away), as an
// operator's kubectl label would: the controller holds it at its next pass.
func (d *Demo) SetReserve(node string, on bool) error {
	if !slices.Contains(d.Computes, node) {
		return fmt.Errorf("no compute node %q in the demo (the compute nodes are: %s)", node, strings.Join(d.Computes, ", "))
	}
	value := ""
	if on {
		value = "true"
	}
	return d.Kube.SetNodeLabel(node, DemoReserveLabel, value)
}

// ReviveHost starts a dead demo node's machine again: nova-compute restarts (and cleans up
// after the evacuations), the Node is Ready again.
func (d *Demo) ReviveHost(node string) error {
	if !slices.Contains(d.Computes, node) {
		return fmt.Errorf("no compute node %q in the demo (the compute nodes are: %s)", node, strings.Join(d.Computes, ", "))
	}
	d.World.ReviveHost(node)
	return d.Kube.SetNodeReady(node, true)
}
