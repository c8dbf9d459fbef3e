package redisclient

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/furrowhq/furrow/internal/testenv"
)

func TestOpenRefusesABadURLWithoutQuotingIt(t *testing.T) {
	_, err := Open("http://user:hunter2@redis.example:6379", Options{ConnectTimeout: time.Second, DeadConnTimeout: time.Second})
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err = %v, want an error without the password", err)
	}
}

func TestOpenTalksToRedis(t *testing.T) {
	c, err := Open(testenv.RedisURL(t), Options{ConnectTimeout: time.Second, DeadConnTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("ping: %v", err)
	}
}
