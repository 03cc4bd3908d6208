package pipeline

import (
	"context"
	"errors"
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
