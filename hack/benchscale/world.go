package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// cluster is a real kube-apiserver and etcd (the envtest binaries), its etcd data kept in
// a directory so that a world built once is measured again without rebuilding it.
type cluster struct {
	env        *envtest.Environment
	cfg        *rest.Config
	kubeconfig string
}

func startCluster(dataDir string) (*cluster, error) {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	env := &envtest.Environment{}
	env.ControlPlane.Etcd = &envtest.Etcd{DataDir: filepath.Join(dataDir, "etcd"),
		// 150,000 pods are ~1 GiB in etcd; the default 2 GiB quota is too close.
		Args: []string{"--quota-backend-bytes=8589934592"}}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd (KUBEBUILDER_ASSETS=%s): %w", os.Getenv("KUBEBUILDER_ASSETS"), err)
	}
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "bench", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	data, err := user.KubeConfig()
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	path := filepath.Join(dataDir, "kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &cluster{env: env, cfg: cfg, kubeconfig: path}, nil
}

func (c *cluster) stop() { _ = c.env.Stop() }

// bulkClient speaks protobuf with no client-side rate limit: the world is built by many
// workers at once, as fast as the API server takes it.
func (c *cluster) bulkClient() (*kubernetes.Clientset, error) {
	cfg := rest.CopyConfig(c.cfg)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.QPS, cfg.Burst = -1, 0
	return kubernetes.NewForConfig(cfg)
}

// startWorld starts the API server on dir's etcd data and creates what is missing of the
// world (nothing, when a run before built it); the caller stops the cluster.
func startWorld(ctx context.Context, dir string, size worldSize, workers int) (*cluster, *kubernetes.Clientset, error) {
	c, err := startCluster(dir)
	if err != nil {
		return nil, nil, err
	}
	cs, err := c.bulkClient()
	if err != nil {
		c.stop()
		return nil, nil, err
	}
	logf("building the world: %d nodes, %d pods (%d workers)", size.nodes, size.pods, workers)
	n, took, err := buildWorld(ctx, cs, size, workers, func(s string) { logf("  %s", s) })
	switch {
	case err != nil:
		c.stop()
		return nil, nil, fmt.Errorf("building the world: %w", err)
	case n == 0:
		logf("the world was there already (%s)", dir)
	default:
		logf("created %d objects in %s (%.0f/s, each a create and a status write)", n, took.Round(time.Second), float64(n)/took.Seconds())
	}
	return c, cs, nil
}

type worldSize struct{ nodes, pods, namespaces int }

func nodeName(i int) string { return fmt.Sprintf("node-%05d", i) }

// buildWorld creates what is missing of nodes Ready and pods bound and Running (their
// status written as a kubelet would), with workers in parallel. It returns how many objects
// it created and how long that took.
func buildWorld(ctx context.Context, cs kubernetes.Interface, size worldSize, workers int, progress func(string)) (int, time.Duration, error) {
	start := time.Now()
	have, err := countWorld(ctx, cs)
	if err != nil {
		return 0, 0, err
	}
	if err := untaint(ctx, cs); err != nil {
		return 0, 0, err
	}
	if have.nodes >= size.nodes && have.pods >= size.pods {
		return 0, 0, nil
	}
	for i := 0; i < size.namespaces; i++ {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("team-%02d", i)}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return 0, 0, err
		}
	}
	var created atomic.Int64
	run := func(what string, n int, one func(ctx context.Context, i int) error) error {
		next := atomic.Int64{}
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		done := make(chan struct{})
		go func() {
			t := time.NewTicker(5 * time.Second)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					progress(fmt.Sprintf("%s: %d of %d", what, min(int(next.Load()), n), n))
				}
			}
		}()
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= n {
						return
					}
					if err := one(ctx, i); err != nil {
						errs <- fmt.Errorf("%s %d: %w", what, i, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(done)
		select {
		case err := <-errs:
			return err
		default:
			return nil
		}
	}
	err = run("nodes", size.nodes, func(ctx context.Context, i int) error {
		n, err := cs.CoreV1().Nodes().Create(ctx, benchNode(i), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		if err != nil {
			return err
		}
		n.Status = benchNodeStatus(i)
		_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		created.Add(1)
		return err
	})
	if err == nil {
		err = untaint(ctx, cs)
	}
	if err != nil {
		return 0, 0, err
	}
	err = run("pods", size.pods, func(ctx context.Context, i int) error {
		p, err := cs.CoreV1().Pods(benchPodNamespace(i, size)).Create(ctx, benchPod(i, size), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		if err != nil {
			return err
		}
		p.Status = benchPodStatus(i, p.CreationTimestamp)
		_, err = cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		created.Add(1)
		return err
	})
	return int(created.Load()), time.Since(start), err
}

// untaint takes off the not-ready taint the API server puts on a new node: a node
// lifecycle controller would, once the node reports Ready, and none runs here.
func untaint(ctx context.Context, cs kubernetes.Interface) error {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if len(n.Spec.Taints) == 0 {
			continue
		}
		n.Spec.Taints = nil
		if _, err := cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("untainting %s: %w", n.Name, err)
		}
	}
	return nil
}

func countWorld(ctx context.Context, cs kubernetes.Interface) (worldSize, error) {
	var s worldSize
	// ListMeta.RemainingItemCount is set on a paged read from etcd.
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return s, err
	}
	s.nodes = len(nodes.Items)
	if r := nodes.RemainingItemCount; r != nil {
		s.nodes += int(*r)
	}
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return s, err
	}
	s.pods = len(pods.Items)
	if r := pods.RemainingItemCount; r != nil {
		s.pods += int(*r)
	}
	return s, nil
}

// listAllPods reads every pod, page by page, as a plain client would, and times it.
func listAllPods(ctx context.Context, cs kubernetes.Interface) (time.Duration, error) {
	start := time.Now()
	opts := metav1.ListOptions{Limit: 5000}
	for {
		list, err := cs.CoreV1().Pods("").List(ctx, opts)
		if err != nil {
			return 0, err
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			return time.Since(start), nil
		}
	}
}

func benchNode(i int) *corev1.Node {
	name := nodeName(i)
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"node-role.kubernetes.io/compute": "", "topology.kubernetes.io/zone": fmt.Sprintf("az-%d", i%3),
		"rack": fmt.Sprintf("r%03d", i/20),
	}}, Spec: corev1.NodeSpec{ProviderID: "openstack:///" + uuidFor("node", i)}}
}

func benchNodeStatus(i int) corev1.NodeStatus {
	now := metav1.Now()
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("500Gi")}
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return corev1.NodeStatus{Capacity: res, Allocatable: res, Phase: corev1.NodeRunning,
		Conditions: []corev1.NodeCondition{cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory"),
			cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure"),
			cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID"),
			cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady")},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.%d.%d.%d", i/65536, i/256%256, i%256)},
			{Type: corev1.NodeHostName, Address: nodeName(i)}},
		NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.36.3", OSImage: "Ubuntu 24.04 LTS", KernelVersion: "6.8.0",
			ContainerRuntimeVersion: "containerd://2.1.0", Architecture: "amd64", OperatingSystem: "linux",
			BootID: uuidFor("boot", i), MachineID: uuidFor("machine", i), SystemUUID: uuidFor("node", i)},
	}
}

func benchPodNamespace(i int, s worldSize) string { return fmt.Sprintf("team-%02d", i%s.namespaces) }

// benchPod is pod i, bound to node i mod nodes: a Deployment's pod as a real one looks
// (owner, labels, a service account volume, a container with env, ports and probes).
func benchPod(i int, s worldSize) *corev1.Pod {
	app := fmt.Sprintf("app-%04d", i/s.nodes)
	rs := app + "-7d9f8c6b5"
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 10}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-7d9f8c6b5-%06d", app, i), Namespace: benchPodNamespace(i, s),
			Labels:      map[string]string{"app": app, "pod-template-hash": "7d9f8c6b5", "tier": "backend"},
			Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs,
				UID: types.UID(uuidFor("rs", i/s.nodes)), Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true)}}},
		Spec: corev1.PodSpec{NodeName: nodeName(i % s.nodes), ServiceAccountName: "default", SchedulerName: "default-scheduler",
			Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/" + app + ":1.4.2",
				Args: []string{"--port=8080", "--metrics-port=9090", "--log-level=info"},
				Env: []corev1.EnvVar{{Name: "APP", Value: app}, {Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}},
				LivenessProbe: probe, ReadinessProbe: probe,
				VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptrTo(int64(3607))}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
						Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}}}}}}},
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(int64(300))},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(int64(300))}},
		},
	}
}

func benchPodStatus(i int, created metav1.Time) corev1.PodStatus {
	cond := func(t corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: created}
	}
	ip := fmt.Sprintf("10.%d.%d.%d", 128+i/65536, i/256%256, i%256)
	return corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &created, QOSClass: corev1.PodQOSBurstable,
		HostIP: "10.0.0.1", PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
		Conditions: []corev1.PodCondition{cond(corev1.PodInitialized), cond(corev1.PodReady), cond(corev1.ContainersReady), cond(corev1.PodScheduled)},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, Started: ptrTo(true), Image: "registry.example.com/app:1.4.2",
			ImageID:     "registry.example.com/app@sha256:4f9d6a1e0c2b3a5d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d",
			ContainerID: "containerd://" + uuidFor("ctr", i), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: created}}}},
	}
}

func uuidFor(kind string, i int) string {
	h := uint32(2166136261)
	for _, c := range kind {
		h = (h ^ uint32(c)) * 16777619
	}
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", h, i>>16&0xffff, i>>4&0xfff, i&0xfff, uint64(i)*2654435761&0xffffffffffff)
}

func ptrTo[T any](v T) *T { return &v }
