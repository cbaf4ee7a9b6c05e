package kube

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// summarizing lists and watches a kind, turning each list page's items and each event's
// object into drainctl's summary of it as it arrives: no API object of the kind is ever held,
// not even while the first read gathers them (nodes.go, pods.go).
func summarizing[In, T any, PIn interface {
	*In
	runtime.Object
}, PT interface {
	*T
	runtime.Object
}](list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error),
	summary func(PIn) PT,
) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			obj, err := list(ctx, o)
			if err != nil {
				return nil, err
			}
			items, err := meta.ExtractList(obj)
			if err != nil {
				return nil, err
			}
			lm, err := meta.ListAccessor(obj)
			if err != nil {
				return nil, err
			}
			out := &summaryList[T]{Items: make([]T, 0, len(items))}
			out.ResourceVersion, out.Continue = lm.GetResourceVersion(), lm.GetContinue()
			out.RemainingItemCount = lm.GetRemainingItemCount()
			for _, item := range items {
				if in, ok := item.(PIn); ok {
					out.Items = append(out.Items, *summary(in))
				}
			}
			return out, nil
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w, err := watchFn(ctx, o)
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
				if in, ok := e.Object.(PIn); ok {
					e.Object = summary(in)
				}
				return e, true
			}), nil
		},
	}
}

// summaryList is a page of summaries, as the reflector reads a list.
type summaryList[T any] struct {
	metav1.ListMeta
	Items []T
}

func (l *summaryList[T]) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (l *summaryList[T]) DeepCopyObject() runtime.Object {
	cp := *l
	cp.Items = slices.Clone(l.Items)
	return &cp
}
