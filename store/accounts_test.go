package store_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/store"
)

func TestUsers(t *testing.T) {
	ctx := context.Background()
	db, url := newDB(t, newClock())
	u, token, err := db.CreateUser(ctx, "ada@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(token, furrow.UserTokenPrefix) || len(token) < len(furrow.UserTokenPrefix)+43 {
		t.Fatalf("token %q lacks the prefix or 256 bits", token)
	}
	got, err := db.UserByToken(ctx, token)
	if err != nil || got != u {
		t.Fatalf("UserByToken = %+v, %v; want %+v", got, err, u)
	}
	_, err = db.UserByToken(ctx, token+"x")
	wantCode(t, err, furrow.EUNAUTHORIZED)
	_, _, err = db.CreateUser(ctx, "ada@example.com")
	wantCode(t, err, furrow.ECONFLICT)
	if strings.Contains(err.Error(), "ada@") {
		t.Errorf("conflict error quotes the value: %v", err)
	}
	assertNotStored(t, url, "SELECT count(*) FROM users WHERE position($1 in encode(token_hash, 'escape')) > 0", token)
}

// assertNotStored fails if query, given secret, counts any row.
func assertNotStored(t *testing.T, url, query, secret string) {
	t.Helper()
	ctx := context.Background()
	conn := connect(t, url)
	var n int
	if err := conn.QueryRow(ctx, query, secret).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("a secret is stored in plain text")
	}
}

func TestFarmsAndMembers(t *testing.T) {
	ctx := context.Background()
	db, _ := newDB(t, newClock())
	owner, other := newUser(t, db), newUser(t, db)
	farm, err := db.CreateFarm(ctx, owner.ID, "South")
	if err != nil || farm.Name != "South" || farm.ID == uuid.Nil {
		t.Fatalf("CreateFarm = %+v, %v", farm, err)
	}
	if role, err := db.MemberRole(ctx, farm.ID, owner.ID); err != nil || role != furrow.RoleOwner {
		t.Fatalf("owner role = %v, %v", role, err)
	}
	_, err = db.MemberRole(ctx, farm.ID, other.ID)
	wantCode(t, err, furrow.ENOTFOUND)

	if err := db.AddMember(ctx, furrow.Member{FarmID: farm.ID, UserID: other.ID, Role: furrow.RoleViewer}); err != nil {
		t.Fatal(err)
	}
	if role, _ := db.MemberRole(ctx, farm.ID, other.ID); role != furrow.RoleViewer {
		t.Fatalf("member role = %v, want viewer", role)
	}
	err = db.AddMember(ctx, furrow.Member{FarmID: farm.ID, UserID: other.ID, Role: furrow.RoleManager})
	wantCode(t, err, furrow.ECONFLICT)
	err = db.AddMember(ctx, furrow.Member{FarmID: farm.ID, UserID: uuid.New(), Role: furrow.RoleViewer})
	wantCode(t, err, furrow.ENOTFOUND)
	if furrow.ErrorMessage(err) != "The user was not found." {
		t.Errorf("message = %q, want user not found", furrow.ErrorMessage(err))
	}
	err = db.AddMember(ctx, furrow.Member{FarmID: uuid.New(), UserID: other.ID, Role: furrow.RoleViewer})
	wantCode(t, err, furrow.ENOTFOUND)
	err = db.AddMember(ctx, furrow.Member{FarmID: farm.ID, UserID: other.ID, Role: 9})
	wantCode(t, err, furrow.EINVALID)
	_, err = db.CreateFarm(ctx, uuid.New(), "Orphan")
	wantCode(t, err, furrow.ENOTFOUND)
	_, err = db.CreateFarm(ctx, owner.ID, "bad\x00name")
	wantCode(t, err, furrow.EINVALID)
}

func TestDevicesAndKeys(t *testing.T) {
	ctx := context.Background()
	db, url := newDB(t, newClock())
	fx := newFixture(t, db)
	if !strings.HasPrefix(fx.key, furrow.DeviceKeyPrefix) || len(fx.key) < len(furrow.DeviceKeyPrefix)+43 {
		t.Fatalf("key %q lacks the prefix or 256 bits", fx.key)
	}
	assertNotStored(t, url, "SELECT count(*) FROM devices WHERE position($1 in encode(key_hash, 'escape')) > 0", fx.key)
	got, err := db.DeviceByKey(ctx, furrow.HashSecret(fx.key))
	if err != nil || got.ID != fx.device.ID || got.FarmID != fx.farm.ID || got.LastSeenMs != nil {
		t.Fatalf("DeviceByKey = %+v, %v", got, err)
	}
	if got, err := db.DeviceByID(ctx, fx.device.ID); err != nil || got.Name != "probe-1" {
		t.Fatalf("DeviceByID = %+v, %v", got, err)
	}
	_, err = db.DeviceByID(ctx, uuid.New())
	wantCode(t, err, furrow.ENOTFOUND)

	newKey, err := db.RotateDeviceKey(ctx, fx.farm.ID, fx.device.ID)
	if err != nil || newKey == fx.key {
		t.Fatalf("RotateDeviceKey = %q, %v", newKey, err)
	}
	_, err = db.DeviceByKey(ctx, furrow.HashSecret(fx.key))
	wantCode(t, err, furrow.ENOTFOUND)
	if got, err := db.DeviceByKey(ctx, furrow.HashSecret(newKey)); err != nil || got.ID != fx.device.ID {
		t.Fatalf("new key: %+v, %v", got, err)
	}
	_, err = db.RotateDeviceKey(ctx, uuid.New(), fx.device.ID)
	wantCode(t, err, furrow.ENOTFOUND)
	if _, err := db.DeviceByKey(ctx, furrow.HashSecret(newKey)); err != nil {
		t.Fatalf("a rotation on another farm revoked the key: %v", err)
	}

	_, _, err = db.CreateDevice(ctx, uuid.New(), "lost")
	wantCode(t, err, furrow.ENOTFOUND)
	if _, _, err := db.CreateDevice(ctx, fx.farm.ID, "a-first"); err != nil {
		t.Fatal(err)
	}
	ds, _, err := db.Devices(ctx, furrow.DeviceFilter{FarmID: fx.farm.ID})
	if err != nil || len(ds) != 2 || ds[0].Name != "a-first" || ds[1].Name != "probe-1" {
		t.Fatalf("Devices = %+v, %v; want a-first, probe-1", ds, err)
	}
	if ds, _, err := db.Devices(ctx, furrow.DeviceFilter{FarmID: uuid.New()}); err != nil || len(ds) != 0 {
		t.Fatalf("Devices of unknown farm = %+v, %v", ds, err)
	}
}

// A page of a farm's devices is read from the farm's index on (name, id)
// at its place, not by sorting the farm's devices, so that a page costs
// the same at any depth of a large farm.
func TestDevicesPageReadsTheIndexAtItsPlace(t *testing.T) {
	ctx := context.Background()
	db, url := newDB(t, newClock())
	fx := newFixture(t, db)
	other := newFixture(t, db)
	conn := connect(t, url)
	for _, farm := range []uuid.UUID{fx.farm.ID, other.farm.ID} {
		if _, err := conn.Exec(ctx, `INSERT INTO devices (id, farm_id, name, key_hash, created_at_ms)
			SELECT gen_random_uuid(), $1, 'sensor-' || lpad(i::text, 5, '0'), sha256(($2 || i)::bytea), 0
			FROM generate_series(1, 5000) i`, farm, farm.String()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, "ANALYZE devices"); err != nil {
		t.Fatal(err)
	}
	f := furrow.DeviceFilter{FarmID: fx.farm.ID, Limit: 100}
	page, next, err := db.Devices(ctx, f)
	if err != nil || len(page) != 100 || next == nil || next.Name != "sensor-00099" { // after the fixture's probe-1
		t.Fatalf("first page: %d devices, next %v, %v", len(page), next, err)
	}
	f.After = &furrow.DevicePlace{Name: "sensor-04000", ID: uuid.Nil}
	if page, _, err = db.Devices(ctx, f); err != nil || len(page) != 100 || page[0].Name != "sensor-04000" {
		t.Fatalf("deep page: %d devices from %v, %v", len(page), deviceName(page), err)
	}
	q, args := store.DevicesQuery(f)
	if idx := planNames(t, conn, "Index Name", q, args...); !slices.Equal(idx, []string{"devices_farm_name"}) {
		t.Fatalf("a page reads the indexes %v; want devices_farm_name alone", idx)
	}
	if nodes := planNames(t, conn, "Node Type", q, args...); slices.Contains(nodes, "Sort") {
		t.Fatalf("a page's plan sorts: %v", nodes)
	}
	if conds := planNames(t, conn, "Index Cond", q, args...); len(conds) != 1 || !strings.Contains(conds[0], "ROW(name, id) >") {
		t.Fatalf("the index is not entered at the page's place: %v", conds)
	}
}

// deviceName is the name of the first device of ds, or "".
func deviceName(ds []furrow.Device) string {
	if len(ds) == 0 {
		return ""
	}
	return ds[0].Name
}

func TestEmptyUntilFirstUser(t *testing.T) {
	ctx := context.Background()
	db, _ := newDB(t, newClock())
	if empty, err := db.Empty(ctx); err != nil || !empty {
		t.Fatalf("new database: Empty = %v, %v", empty, err)
	}
	newUser(t, db)
	if empty, err := db.Empty(ctx); err != nil || empty {
		t.Fatalf("after a user: Empty = %v, %v", empty, err)
	}
}
