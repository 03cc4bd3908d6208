package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"os"
	"sort"
	"strings"
	"time"
)

// The bench's other logs are the generated log's records written another
// way, line by line: the same service and defects, so what differs between
// the scans is only how the log writes them.

// reshape writes each line of src through shape to path; lines that are
// not JSON objects (the generator's corrupt ones) pass unchanged.
func reshape(src, path string, shape func(rng *rand.Rand, rec map[string]any, w *bytes.Buffer)) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(out, 1<<20)
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 4<<20)
	rng := rand.New(rand.NewSource(11))
	var b bytes.Buffer
	for sc.Scan() {
		line := sc.Bytes()
		var rec map[string]any
		if json.Unmarshal(line, &rec) != nil || rec == nil {
			w.Write(line)
			w.WriteByte('\n')
			continue
		}
		b.Reset()
		shape(rng, rec, &b)
		w.Write(b.Bytes())
		w.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		out.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// writeObject writes keys in the order given, then the rest sorted.
func writeObject(w *bytes.Buffer, rec map[string]any, first ...string) {
	w.WriteByte('{')
	n := 0
	put := func(k string) {
		v, ok := rec[k]
		if !ok {
			return
		}
		if n > 0 {
			w.WriteByte(',')
		}
		n++
		kb, _ := json.Marshal(k)
		vb, _ := json.Marshal(v)
		w.Write(kb)
		w.WriteByte(':')
		w.Write(vb)
		delete(rec, k)
	}
	for _, k := range first {
		put(k)
	}
	var rest []string
	for k := range rec {
		rest = append(rest, k)
	}
	sort.Strings(rest)
	for _, k := range rest {
		put(k)
	}
	w.WriteByte('}')
}

// cachedShape is a the-loop log shaped differently: level first and the
// time last, and on most lines fields whose values are false and 0 — a
// "cached":false or "errors":0 is enough to put the give-up's value and
// the word error on nearly every line.
func cachedShape(rng *rand.Rand, rec map[string]any, w *bytes.Buffer) {
	if rng.Intn(10) < 9 {
		rec["cached"] = rng.Intn(8) == 0
		rec["errors"] = 0
		rec["retry_in_ms"] = rng.Intn(5000)
	}
	ts := rec["ts"]
	delete(rec, "ts")
	writeObject(w, rec, "level", "event", "source")
	if ts != nil {
		w.Truncate(w.Len() - 1)
		fmt.Fprintf(w, `,"ts":%q}`, ts)
	}
}

var pinoLevels = map[string]int{"debug": 20, "info": 30, "warning": 40, "error": 50}

// pinoShape is the record as pino writes it: numeric level, epoch-ms time,
// then its bindings (pid, hostname, name), the logged object's fields (the
// error as err {type, message, stack}), and msg last (pino's asJson:
// data + propStr + msgStr, as testdata/formats/pino.jsonl has it).
func pinoShape(rng *rand.Rand, rec map[string]any, w *bytes.Buffer) {
	level, _ := rec["level"].(string)
	out := map[string]any{"level": pinoLevels[level], "pid": 1200 + rng.Intn(4), "hostname": fmt.Sprintf("loop-%d", rng.Intn(3)), "name": "the-loop"}
	if n, ok := out["level"].(int); !ok || n == 0 {
		out["level"] = 30
	}
	if ts, ok := rec["ts"].(string); ok {
		if t, err := time.Parse(time.RFC3339Nano, ts); err == nil {
			out["time"] = t.UnixMilli()
		}
	}
	out["msg"] = rec["event"]
	if e, ok := rec["error"].(string); ok && e != "" {
		kind := "Error"
		if i := strings.Index(e, ":"); i > 0 && i < 30 && !strings.Contains(e[:i], " ") {
			kind = e[:i]
		}
		out["err"] = map[string]any{"type": kind, "message": e, "stack": kind + ": " + e + "\n    at Dispatcher.run (/srv/loop/dispatch.js:88:13)\n    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)"}
	}
	for k, v := range rec {
		switch k {
		case "ts", "level", "event", "error":
		default:
			out[k] = v
		}
	}
	msg := out["msg"]
	delete(out, "msg")
	writeObject(w, out, "level", "time", "pid", "hostname", "name")
	if msg != nil {
		b, _ := json.Marshal(msg)
		w.Truncate(w.Len() - 1)
		fmt.Fprintf(w, `,"msg":%s}`, b)
	}
}

var _ io.Writer = (*bytes.Buffer)(nil)
