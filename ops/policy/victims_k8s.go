package policy

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drainctl/drainctl/model"
)

// The scheduler's own predicates read Kubernetes' types: a pod or node converted once, when a rule needs it.

// lazyPod builds a constrained pod's Kubernetes Pod once, the first time a tainted node or
// its selectors need it: most pods carry only the default tolerations, which matter on
// tainted nodes alone (building one for each at every ranking cost 1.3 KiB a pod).
type lazyPod struct {
	pod   *model.Pod
	built *corev1.Pod
}

func (l *lazyPod) selects() bool {
	return len(l.pod.NodeSelector()) > 0 || len(l.pod.NodeAffinity()) > 0
}

func (l *lazyPod) get() *corev1.Pod {
	if l.built == nil {
		l.built = k8sPod(l.pod)
	}
	return l.built
}

// lazyNode builds a room's Kubernetes Node once, the first time a constrained pod needs it;
// rooms are copied per victim, the pointer keeps one build for all the copies.
type lazyNode struct {
	kube  *model.KubeNode
	built *corev1.Node
}

func (l *lazyNode) get() *corev1.Node {
	if l.built == nil {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: l.kube.Name, Labels: l.kube.Labels}}
		for _, t := range l.kube.Taints {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
		}
		l.built = n
	}
	return l.built
}

// k8sPod builds the scheduling-relevant part of a pod for component-helpers.
func k8sPod(p *model.Pod) *corev1.Pod {
	out := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: p.NodeSelector()}}
	for _, t := range p.Tolerations() {
		out.Spec.Tolerations = append(out.Spec.Tolerations, corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOperator(t.Operator),
			Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	if len(p.NodeAffinity()) > 0 {
		sel := &corev1.NodeSelector{}
		for _, term := range p.NodeAffinity() {
			var t corev1.NodeSelectorTerm
			for _, r := range term.MatchExpressions {
				t.MatchExpressions = append(t.MatchExpressions, corev1.NodeSelectorRequirement{Key: r.Key,
					Operator: corev1.NodeSelectorOperator(r.Operator), Values: r.Values})
			}
			sel.NodeSelectorTerms = append(sel.NodeSelectorTerms, t)
		}
		out.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: sel}}
	}
	return out
}
