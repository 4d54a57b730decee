package kube

import "iter"

// nameSet is a set of strings that nearly always holds one: the Source's
// claims (an Ingress's host/path, backend name and host) and its backends
// by Service and by Secret are sets of one member but for contested names.
// A map of its own per set cost some 250 bytes; at 10,000 Ingresses their
// 40,000 sets took 13 MB as maps. It holds its member itself until a
// second comes.
type nameSet struct {
	one  string              // the member while there is one; "" otherwise
	many map[string]struct{} // the members while there are two or more
}

func (n *nameSet) add(k string) {
	switch {
	case n.many != nil:
		n.many[k] = struct{}{}
	case n.one == "" || n.one == k:
		n.one = k
	default:
		n.many = map[string]struct{}{n.one: {}, k: {}}
		n.one = ""
	}
}

func (n *nameSet) remove(k string) {
	if n.many == nil {
		if n.one == k {
			n.one = ""
		}
		return
	}
	delete(n.many, k)
	if len(n.many) == 1 {
		for last := range n.many {
			n.one = last
		}
		n.many = nil
	}
}

// len is the number of members; 0 for a nil set.
func (n *nameSet) len() int {
	switch {
	case n == nil:
		return 0
	case n.many != nil:
		return len(n.many)
	case n.one != "":
		return 1
	}
	return 0
}

// all yields the members, in no order; none for a nil set.
func (n *nameSet) all() iter.Seq[string] {
	return func(yield func(string) bool) {
		switch {
		case n == nil:
		case n.many != nil:
			for k := range n.many {
				if !yield(k) {
					return
				}
			}
		case n.one != "":
			yield(n.one)
		}
	}
}
