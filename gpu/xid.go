package gpu

import (
	"slices"
	"strconv"
)

// XIDFault says who is at fault for an XID error.
type XIDFault uint8

// The faults. FaultUnknown is that of a code the catalogue does not hold.
const (
	FaultUnknown XIDFault = iota
	FaultApplication
	FaultDriver
	FaultHardware
)

var faultNames = [...]string{FaultUnknown: "unknown", FaultApplication: "application", FaultDriver: "driver", FaultHardware: "hardware"}

// String names the fault as the rule language writes it: "application",
// "driver", "hardware", "unknown".
func (f XIDFault) String() string {
	if int(f) < len(faultNames) {
		return faultNames[f]
	}
	return "unknown"
}

// XIDFaultNames lists the faults' names.
func XIDFaultNames() []string { return append([]string(nil), faultNames[:]...) }

// LookupXIDFault finds the fault called name.
func LookupXIDFault(name string) (XIDFault, bool) {
	i := slices.Index(faultNames[:], name)
	return XIDFault(max(i, 0)), i >= 0
}

// XIDAction is what NVIDIA recommends doing about an XID error, in order
// of cost.
type XIDAction uint8

// The actions. ActionSupport is also that of a code the catalogue does
// not hold.
const (
	ActionNone    XIDAction = iota // nothing, unless it repeats
	ActionRestart                  // restart the application
	ActionReset                    // reset the GPU
	ActionReboot                   // reset the GPU or, failing that, reboot the node
	ActionSupport                  // drain the GPU and call NVIDIA support
)

var actionNames = [...]string{ActionNone: "none", ActionRestart: "restart", ActionReset: "reset", ActionReboot: "reboot", ActionSupport: "support"}

// String names the action as the rule language writes it: "none",
// "restart", "reset", "reboot", "support".
func (a XIDAction) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return "support"
}

// XIDActionNames lists the actions' names.
func XIDActionNames() []string { return append([]string(nil), actionNames[:]...) }

// LookupXIDAction finds the action called name.
func LookupXIDAction(name string) (XIDAction, bool) {
	i := slices.Index(actionNames[:], name)
	return XIDAction(max(i, 0)), i >= 0
}

// Advice says the action for people: "reset the GPU or reboot the node".
func (a XIDAction) Advice() string {
	switch a {
	case ActionNone:
		return "nothing to do unless it repeats"
	case ActionRestart:
		return "restart the application"
	case ActionReset:
		return "reset the GPU once its jobs have stopped"
	case ActionReboot:
		return "reset the GPU or reboot the node"
	}
	return "drain the GPU and call NVIDIA support"
}

// XID is one entry of NVIDIA's XID catalogue: what an XID error code
// means, who is at fault and what to do.
type XID struct {
	Code   uint64
	Name   string // what happened, for people: "the GPU has fallen off the bus"
	Fault  XIDFault
	Action XIDAction
}

// xidCatalogue is NVIDIA's XID catalogue (docs.nvidia.com/deploy/xid-errors)
// for the codes data-center GPUs report, by code. Fault and Action follow
// its causes and resolution buckets: RESTART_APP is ActionRestart,
// RESET_GPU ActionReset, RESTART_BM ActionReboot, CONTACT_SUPPORT
// ActionSupport.
var xidCatalogue = [...]XID{
	{8, "the GPU stopped processing (channel idle timeout)", FaultDriver, ActionRestart},
	{13, "graphics engine exception, usually the application's out-of-range access or illegal instruction", FaultApplication, ActionRestart},
	{31, "GPU memory page fault, usually the application's illegal address", FaultApplication, ActionRestart},
	{32, "invalid or corrupted push buffer stream", FaultDriver, ActionRestart},
	{38, "driver firmware error", FaultDriver, ActionReset},
	{43, "the GPU stopped the application's work after its error", FaultApplication, ActionRestart},
	{44, "graphics engine fault during a context switch", FaultDriver, ActionReset},
	{45, "preemptive cleanup after earlier errors: the application was stopped", FaultApplication, ActionNone},
	{46, "the GPU stopped processing", FaultDriver, ActionReset},
	{48, "double-bit (uncorrectable) ECC error", FaultHardware, ActionReset},
	{56, "display engine error", FaultDriver, ActionReset},
	{57, "error programming the video memory interface", FaultHardware, ActionReset},
	{58, "unstable video memory interface", FaultHardware, ActionReset},
	{61, "internal micro-controller breakpoint or warning", FaultDriver, ActionReset},
	{62, "internal micro-controller halt", FaultHardware, ActionReset},
	{63, "a row remap or page retirement was recorded and takes effect at the next reset", FaultHardware, ActionReset},
	{64, "a row remap or page retirement failed to record", FaultHardware, ActionSupport},
	{65, "video processor exception", FaultHardware, ActionReset},
	{68, "video decoder (NVDEC) exception", FaultApplication, ActionRestart},
	{69, "graphics engine class error", FaultApplication, ActionRestart},
	{74, "NVLink error", FaultHardware, ActionReset},
	{79, "the GPU has fallen off the bus", FaultHardware, ActionReboot},
	{81, "VGA subsystem error", FaultHardware, ActionReset},
	{92, "high single-bit ECC error rate", FaultHardware, ActionSupport},
	{93, "the InfoROM passed its wear limit", FaultHardware, ActionSupport},
	{94, "contained ECC error: the application that touched the memory must restart", FaultHardware, ActionRestart},
	{95, "uncontained ECC error: every application on the GPU is affected", FaultHardware, ActionReset},
	{109, "context switch timeout", FaultApplication, ActionRestart},
	{110, "security fault", FaultHardware, ActionReset},
	{119, "GSP RPC timeout", FaultDriver, ActionReset},
	{120, "GSP error", FaultDriver, ActionReset},
	{121, "corrected error on the C2C link", FaultHardware, ActionNone},
	{140, "unrecovered ECC error", FaultHardware, ActionReset},
	{143, "GPU initialization failure", FaultHardware, ActionSupport},
	{154, "the GPU's recovery action changed: see its recovery_action", FaultDriver, ActionNone},
}

// XIDCatalogue returns the catalogue's entries, by code.
func XIDCatalogue() []XID { return append([]XID(nil), xidCatalogue[:]...) }

// LookupXID finds code in the catalogue. A code it does not hold reads as
// an unknown fault whose action is to call support, with ok false.
func LookupXID(code uint64) (x XID, ok bool) {
	i, found := slices.BinarySearchFunc(xidCatalogue[:], code, func(e XID, c uint64) int {
		switch {
		case e.Code < c:
			return -1
		case e.Code > c:
			return 1
		}
		return 0
	})
	if !found {
		return XID{Code: code, Name: "not in gpuwatch's catalogue: see https://docs.nvidia.com/deploy/xid-errors/", Fault: FaultUnknown, Action: ActionSupport}, false
	}
	return xidCatalogue[i], true
}

// XIDFaultOf returns the fault of code, FaultUnknown when the catalogue
// does not hold it. It does not allocate.
func XIDFaultOf(code uint64) XIDFault {
	x, _ := LookupXID(code)
	return x.Fault
}

// XIDActionOf returns the action of code, ActionSupport when the
// catalogue does not hold it. It does not allocate.
func XIDActionOf(code uint64) XIDAction {
	x, _ := LookupXID(code)
	return x.Action
}

// Text says what the XID means and what to do: "XID 79: the GPU has
// fallen off the bus — reset the GPU or reboot the node".
func (x XID) Text() string {
	return "XID " + strconv.FormatUint(x.Code, 10) + ": " + x.Name + " — " + x.Action.Advice()
}
