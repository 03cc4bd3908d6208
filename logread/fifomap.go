package logread

// fifoMap is a map bounded to max keys: inserting past it evicts the
// oldest. The healing checks keep their pending failures in one, so memory
// stays bounded whatever the log holds; an evicted failure is not healed.
type fifoMap[K comparable, V any] struct {
	m     map[K]V
	order []K // keys, oldest first; may hold deleted keys until compacted
	max   int
	// evicted, when set, hears of each entry put pushed out.
	evicted func(k K, v V)
}

func newFIFOMap[K comparable, V any](max int) *fifoMap[K, V] {
	return &fifoMap[K, V]{m: map[K]V{}, max: max}
}

func (f *fifoMap[K, V]) get(k K) (V, bool) { v, ok := f.m[k]; return v, ok }
func (f *fifoMap[K, V]) delete(k K)        { delete(f.m, k) }
func (f *fifoMap[K, V]) len() int          { return len(f.m) }

// put sets k, evicting the oldest keys past the bound.
func (f *fifoMap[K, V]) put(k K, v V) {
	if _, ok := f.m[k]; !ok {
		f.order = append(f.order, k)
	}
	f.m[k] = v
	for len(f.m) > f.max && len(f.order) > 0 {
		if old, live := f.m[f.order[0]]; live && f.evicted != nil {
			f.evicted(f.order[0], old)
		}
		delete(f.m, f.order[0])
		f.order = f.order[1:]
	}
	// Deleted keys linger in order: compact so it stays bounded too.
	if len(f.order) > 2*len(f.m)+1024 {
		kept := f.order[:0]
		for _, k := range f.order {
			if _, ok := f.m[k]; ok {
				kept = append(kept, k)
			}
		}
		f.order = kept
	}
}
