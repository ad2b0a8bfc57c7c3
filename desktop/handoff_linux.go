//go:build desktop && linux

package desktop

import (
	"encoding/json"
	"os"
	"strings"

	"github.com/godbus/dbus/v5"
	"github.com/wailsapp/wails/v2/pkg/options"
)

// handOff gives this launch's arguments to a window already open on the same
// folder and reports whether one took them. Wails would do the same inside
// wails.Run but then exits with status 1, which tells a script or a desktop
// launcher that `atrium --open ID` failed when it worked; doing it first lets
// the second instance exit 0. Any D-Bus trouble answers false and Wails' own
// lock decides.
func handOff(uniqueID string) bool {
	// The name Wails v2 registers for its SingleInstanceLock on Linux.
	id := "wails_app_" + strings.NewReplacer("-", "_", ".", "_").Replace(uniqueID)
	name, path := "org."+id+".SingleInstance", dbus.ObjectPath("/org/"+id+"/SingleInstance")
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		return false
	}
	defer conn.Close()
	var owned bool
	if err := conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, name).Store(&owned); err != nil || !owned {
		return false
	}
	d := options.SecondInstanceData{Args: os.Args[1:]}
	d.WorkingDirectory, _ = os.Getwd()
	msg, err := json.Marshal(d)
	if err != nil {
		return false
	}
	return conn.Object(name, path).Call(name+".SendMessage", 0, string(msg)).Err == nil
}
