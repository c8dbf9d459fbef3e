// Package live is the live-updates bus of Furrow: every stored reading is
// published to two exact-match topics, farms/{farm}/readings and
// farms/{farm}/devices/{device}/metrics/{metric}, every other farm event to
// farms/{farm}/events, and delivered to the WebSocket clients subscribed to
// them, on this process or, through Redis pub/sub, on any other.
//
// A Bus (NewMemoryBus or NewRedisBus) implements furrow.Publisher and
// furrow.EventPublisher and routes
// messages to local subscribers through its hub. A Server holds the
// WebSocket connections of GET /api/live, which package api authenticates
// and authorizes before handing each over with Server.Accept; PageHandler
// serves the /live page.
package live
