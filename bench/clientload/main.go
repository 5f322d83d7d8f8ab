// Command clientload measures a client package's worker loop: it enqueues
// a queue of no-op jobs, runs a worker command on it, and reports how fast
// the worker completed them and the CPU the worker process spent per job.
// bench/clients runs it for the Go, Python and Node clients.
//
//	clientload -url http://127.0.0.1:8080 -jobs 2000 -- python3 worker.py
//	clientload -work   # the Go client's worker (client.Work), for the command
//
// The worker command gets EMQ_URL, EMQ_QUEUE and BENCH_CONCURRENCY, and must
// stop on SIGTERM.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/echo-mq/echo_mq/client"
)

func main() {
	url := flag.String("url", os.Getenv("EMQ_URL"), "the service")
	jobs := flag.Int("jobs", 2000, "jobs to complete")
	concurrency := flag.Int("concurrency", 8, "the worker's concurrency")
	work := flag.Bool("work", false, "be the Go client's worker, on EMQ_QUEUE")
	flag.Parse()
	if *work {
		goWorker()
		return
	}
	if flag.NArg() == 0 {
		log.Fatal("clientload: give the worker command after --")
	}
	if err := measure(*url, *jobs, *concurrency, flag.Args()); err != nil {
		log.Fatal("clientload: ", err)
	}
}

// measure enqueues jobs no-op jobs on a new queue, runs the worker command
// until they are all completed, and prints the figures.
func measure(url string, jobs, concurrency int, command []string) error {
	queue := "clientload-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	for sent := 0; sent < jobs; sent += 1000 {
		var batch bytes.Buffer
		batch.WriteString(`{"jobs":[`)
		for i := sent; i < min(sent+1000, jobs); i++ {
			if i > sent {
				batch.WriteByte(',')
			}
			batch.WriteString(`{"payload":null}`)
		}
		batch.WriteString(`]}`)
		if _, err := call("POST", url+"/queues/"+queue+"/jobs/batch", batch.Bytes()); err != nil {
			return err
		}
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Env = append(os.Environ(), "EMQ_URL="+url, "EMQ_QUEUE="+queue, "BENCH_CONCURRENCY="+strconv.Itoa(concurrency))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	for {
		done, err := completed(url, queue)
		if err != nil {
			cmd.Process.Kill()
			return err
		}
		if done >= jobs {
			break
		}
		if time.Since(began) > 10*time.Minute {
			cmd.Process.Kill()
			return fmt.Errorf("%d of %d jobs completed in 10 minutes", done, jobs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	elapsed := time.Since(began)
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("the worker: %w", err)
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	fmt.Printf("%-8s %d jobs, concurrency %d: %.1f s, %.0f jobs/s, worker CPU %.0f µs/job\n",
		filepathBase(command), jobs, concurrency, elapsed.Seconds(), float64(jobs)/elapsed.Seconds(),
		float64(cpu.Microseconds())/float64(jobs))
	return nil
}

// filepathBase names a worker command by its program.
func filepathBase(command []string) string {
	name := command[0]
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return name
}

// completed reads how many jobs of queue are completed.
func completed(url, queue string) (int, error) {
	body, err := call("GET", url+"/queues/"+queue, nil)
	if err != nil {
		return 0, err
	}
	var q struct {
		Counts struct {
			Completed int `json:"completed"`
		} `json:"counts"`
	}
	return q.Counts.Completed, json.Unmarshal(body, &q)
}

func call(method, url string, body []byte) ([]byte, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, b.Bytes())
	}
	return b.Bytes(), nil
}

// goWorker runs the Go client's Work on EMQ_QUEUE with a no-op handler
// until SIGTERM.
func goWorker() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	c, err := client.New(os.Getenv("EMQ_URL"))
	if err != nil {
		log.Fatal(err)
	}
	n, _ := strconv.Atoi(os.Getenv("BENCH_CONCURRENCY"))
	err = c.Work(ctx, os.Getenv("EMQ_QUEUE"), func(context.Context, client.Job) (any, error) { return nil, nil },
		client.WithConcurrency(n), client.WithWait(time.Second))
	if err != nil {
		log.Fatal(err)
	}
}
