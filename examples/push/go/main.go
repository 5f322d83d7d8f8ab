// Command receiver is an echo_mq push receiver in Go (docs/push.md).
//
// echo_mq POSTs each job of a queue with a push target to this server. It
// verifies the delivery with the Standard Webhooks library, does the work,
// and answers: 200 with a JSON result completes the job, another status
// fails the attempt (echo_mq retries it under the job's backoff). A job
// whose payload says {"long": true} is answered 202 at once and worked in
// the background; the receiver then completes it itself with the job's
// token, through the Go client (package client), as any worker does.
//
//	EMQ_PUSH_SECRET=whsec_... EMQ_URL=http://127.0.0.1:8080 PORT=9000 go run ./examples/push/go
package main

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/echo-mq/echo_mq/client"
)

// delivery is the part of a delivered job this receiver reads.
type delivery struct {
	ID      string `json:"id"`
	Queue   string `json:"queue"`
	Token   int64  `json:"token"`
	Payload struct {
		Long bool `json:"long"`
		Fail bool `json:"fail"`
		MS   int  `json:"ms"`
	} `json:"payload"`
}

// handle is the work. Put yours here: the value returned is the job's result.
func handle(d delivery) map[string]any { return map[string]any{"handled": d.ID} }

func main() {
	webhook, err := standardwebhooks.NewWebhook(os.Getenv("EMQ_PUSH_SECRET"))
	if err != nil {
		log.Fatalf("EMQ_PUSH_SECRET: %v", err)
	}
	url := os.Getenv("EMQ_URL")
	if url == "" {
		url = "http://127.0.0.1:8080"
	}
	var opts []client.Option
	if key := os.Getenv("EMQ_API_KEY"); key != "" {
		opts = append(opts, client.WithAPIKey(key))
	}
	emq, err := client.New(url, opts...)
	if err != nil {
		log.Fatal(err)
	}
	http.HandleFunc("POST /", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		// Verify checks the signature over webhook-id, webhook-timestamp and
		// the body, and refuses a timestamp five minutes off (a replay).
		if err != nil || webhook.Verify(body, r.Header) != nil {
			answer(w, http.StatusUnauthorized, map[string]string{"error": "bad signature"})
			return
		}
		var d delivery
		if err := json.Unmarshal(body, &d); err != nil {
			answer(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		switch {
		case d.Payload.Long:
			answer(w, http.StatusAccepted, struct{}{})
			go workLater(emq, d)
		case d.Payload.Fail:
			answer(w, http.StatusInternalServerError, map[string]string{"error": "failed on purpose"})
		default:
			answer(w, http.StatusOK, handle(d))
		}
	})
	port := os.Getenv("PORT")
	if port == "" {
		port = "9000"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("receiver listening on %s", ln.Addr())
	log.Fatal(http.Serve(ln, nil))
}

// workLater works a job answered 202 and completes it with its token.
func workLater(emq *client.Client, d delivery) {
	ms := d.Payload.MS
	if ms == 0 {
		ms = 100
	}
	time.Sleep(time.Duration(ms) * time.Millisecond)
	result := handle(d)
	result["long"] = true
	if _, err := emq.Complete(context.Background(), d.Queue, d.ID, client.CompleteRequest{Token: d.Token, Result: result}); err != nil {
		log.Printf("complete %s: %v", d.ID, err)
	}
}

func answer(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
