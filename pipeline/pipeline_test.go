package pipeline

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCollectRunsAStageInIsolation(t *testing.T) {
	double := Map(func(_ context.Context, v int) (int, bool, error) { return 2 * v, v != 3, nil })
	got, err := Collect(context.Background(), double, 1, 2, 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	want := []int{2, 4, 8}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v (order must be kept)", got, want)
		}
	}
}

func TestStageErrorCancelsAndDrainsWithoutLeaks(t *testing.T) {
	boom := errors.New("boom")
	r := New(context.Background())
	// An endless source: only cancellation can stop it.
	src := From(r, func(ctx context.Context, out chan<- int) error {
		for i := 0; ; i++ {
			if err := Send(ctx, out, i); err != nil {
				return err
			}
		}
	})
	failing := Then(r, src, Map(func(_ context.Context, v int) (int, bool, error) {
		if v == 100 {
			return 0, false, boom
		}
		return v, true, nil
	}))
	Into(r, failing, func(context.Context, int) error { return nil })
	done := make(chan error)
	go func() { done <- r.Wait() }()
	select {
	case err := <-done:
		if !errors.Is(err, boom) {
			t.Fatalf("Wait = %v, want boom", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("pipeline did not drain after a stage error")
	}
}

func TestCancellationStopsEveryStage(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := New(ctx)
	src := From(r, func(ctx context.Context, out chan<- int) error {
		for i := 0; ; i++ {
			if err := Send(ctx, out, i); err != nil {
				return err
			}
		}
	})
	slow := Then(r, src, Filter(func(int) bool { return true }))
	Into(r, slow, func(ctx context.Context, v int) error {
		if v == 10 {
			cancel()
		}
		return nil
	})
	if err := r.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
}

// MapOrdered runs items at once yet emits them in input order, drops what f
// does not keep, and stops at f's first error.
func TestMapOrderedKeepsInputOrder(t *testing.T) {
	var running, most atomic.Int32
	square := MapOrdered(4, func(_ context.Context, v int) (int, bool, error) {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(time.Duration(10-v%10) * time.Millisecond) // early items finish last
		running.Add(-1)
		return v * v, v%3 != 0, nil
	})
	got, err := Collect(context.Background(), square, 1, 2, 3, 4, 5, 6, 7, 8)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{1, 4, 16, 25, 49, 64}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v (input order, multiples of 3 dropped)", got, want)
	}
	if most.Load() < 2 {
		t.Fatalf("at most %d item ran at once, want several", most.Load())
	}
	boom := errors.New("boom")
	_, err = Collect(context.Background(), MapOrdered(2, func(_ context.Context, v int) (int, bool, error) {
		if v == 2 {
			return 0, false, boom
		}
		return v, true, nil
	}), 1, 2, 3)
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want boom", err)
	}
}
