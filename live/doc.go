// Package live is the live-updates bus of Furrow: every stored reading is
// published to two exact-match topics, farms/{farm}/readings and
// farms/{farm}/devices/{device}/metrics/{metric}, and delivered to the
// WebSocket clients subscribed to them, on this process or, through Redis
// pub/sub, on any other.
//
// A Bus (NewMemoryBus or NewRedisBus) implements furrow.Publisher and routes
// messages to local subscribers through its hub. Handler serves the
// WebSocket endpoint GET /api/live and PageHandler the /live page.
package live
