// Package pipeline holds the item types that flow between stages and the
// plumbing that connects stages with channels under an errgroup. It is a leaf:
// it imports nothing from this module, so every stage and test can use it.
package pipeline

import (
	"context"

	"github.com/sourcegraph/conc/stream"
	"golang.org/x/sync/errgroup"
)

// Capacity is the capacity of every channel between stages. Fixed: a
// channel is never sized to its input, so memory does not grow with the
// log. It holds a whole burst of the reader's (it sends a region's records
// together): with room for only a quarter of one, the reader stalled on
// every burst until the stages behind it drained, and a full scan took 10%
// longer.
const Capacity = 256

// Send delivers v on out unless ctx is cancelled first. Every stage sends
// through it: a bare `out <- v` would block forever after a cancel.
func Send[T any](ctx context.Context, out chan<- T, v T) error {
	select {
	case out <- v:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stage consumes in until it is closed and writes to out. It must not close
// out: Run does, when the stage returns.
type Stage[In, Out any] func(ctx context.Context, in <-chan In, out chan<- Out) error

// Source produces items on out until it is done.
type Source[T any] func(ctx context.Context, out chan<- T) error

// Map lifts a per-item function into a Stage, so the channel loop is written
// once. Returning keep=false drops the item; an error stops the pipeline.
func Map[In, Out any](f func(ctx context.Context, v In) (out Out, keep bool, err error)) Stage[In, Out] {
	return func(ctx context.Context, in <-chan In, out chan<- Out) error {
		for v := range in {
			o, keep, err := f(ctx, v)
			if err != nil {
				return err
			}
			if !keep {
				continue
			}
			if err := Send(ctx, out, o); err != nil {
				return err
			}
		}
		return ctx.Err()
	}
}

// MapOrdered is Map with f run on up to workers items at once, its results
// sent in input order (conc's stream): for work heavy enough per item, like
// an agent run or a scrubbed dossier, to use the cores a finished reader
// left idle. The first error stops the stage.
func MapOrdered[In, Out any](workers int, f func(ctx context.Context, v In) (out Out, keep bool, err error)) Stage[In, Out] {
	return func(ctx context.Context, in <-chan In, out chan<- Out) error {
		s := stream.New().WithMaxGoroutines(max(workers, 1))
		var stageErr error // callbacks run one at a time, in order: no lock
	loop:
		for {
			var v In
			var ok bool
			select {
			case v, ok = <-in:
				if !ok {
					break loop
				}
			case <-ctx.Done():
				break loop
			}
			s.Go(func() stream.Callback {
				o, keep, err := f(ctx, v)
				return func() {
					switch {
					case stageErr != nil:
					case err != nil:
						stageErr = err
					case keep:
						stageErr = Send(ctx, out, o)
					}
				}
			})
		}
		s.Wait()
		if stageErr != nil {
			return stageErr
		}
		return ctx.Err()
	}
}

// Filter keeps the items for which keep returns true.
func Filter[T any](keep func(T) bool) Stage[T, T] {
	return Map(func(_ context.Context, v T) (T, bool, error) { return v, keep(v), nil })
}

// Run owns the goroutines of one pipeline: every stage runs in its errgroup,
// the first error cancels the shared context, and Wait returns it.
type Run struct {
	g   *errgroup.Group
	ctx context.Context
}

// New starts a pipeline bound to ctx. The returned context is cancelled when
// any stage fails; stages receive it.
func New(ctx context.Context) *Run {
	g, gctx := errgroup.WithContext(ctx)
	return &Run{g: g, ctx: gctx}
}

// Context is the pipeline's context, cancelled on the first stage error.
func (r *Run) Context() context.Context { return r.ctx }

// Wait waits for every stage and returns the first error.
func (r *Run) Wait() error { return r.g.Wait() }

// From starts a source and returns its output channel.
func From[T any](r *Run, src Source[T]) <-chan T {
	out := make(chan T, Capacity)
	r.g.Go(func() error {
		defer close(out)
		return src(r.ctx, out)
	})
	return out
}

// Then starts stage st reading in and returns its output channel, closed
// when the stage returns.
func Then[In, Out any](r *Run, in <-chan In, st Stage[In, Out]) <-chan Out {
	out := make(chan Out, Capacity)
	r.g.Go(func() error {
		defer close(out)
		err := st(r.ctx, in, out)
		if err != nil {
			// Unblock the upstream stage: it may be waiting to send.
			go drain(in)
		}
		return err
	})
	return out
}

// Into ends the pipeline in a sink that handles every item.
func Into[T any](r *Run, in <-chan T, sink func(ctx context.Context, v T) error) {
	r.g.Go(func() error {
		for v := range in {
			if err := sink(r.ctx, v); err != nil {
				go drain(in)
				return err
			}
		}
		return nil
	})
}

func drain[T any](in <-chan T) {
	for range in {
	}
}

// Collect runs one stage over items and returns everything it emitted: a test
// helper that drives a stage in isolation.
func Collect[In, Out any](ctx context.Context, st Stage[In, Out], items ...In) ([]Out, error) {
	r := New(ctx)
	in := From(r, func(ctx context.Context, out chan<- In) error {
		for _, v := range items {
			if err := Send(ctx, out, v); err != nil {
				return err
			}
		}
		return nil
	})
	var got []Out
	Into(r, Then(r, in, st), func(_ context.Context, v Out) error {
		got = append(got, v)
		return nil
	})
	err := r.Wait()
	return got, err
}
