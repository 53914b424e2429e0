//! The EL2 exception vector table, the world switch into a guest (`enter_guest`) and the save
//! of the guest's registers when it traps back.
//!
//! While a guest runs, the EL2 stack holds the host's callee-saved registers, a pointer to
//! the guest's `GuestRegs` and the short exit. Any exception from a lower EL the short exit
//! does not finish saves x0..x30 and ELR/SPSR there, restores the host registers and returns
//! from `enter_guest` with the exit kind, so trap handling is ordinary Rust on the ordinary
//! stack. The guest's FP/SIMD registers stay live
//! through an exit: Partita's code never uses them (it is built soft-float), and `fp` moves
//! them only when a vCPU leaves or takes the CPU.
//! The frequent exits (a physical IRQ, and a synchronous exception whose class is WFx, a
//! data abort, HVC or SMC) first go to the caller's short exit (`enter_guest`'s `short`) with
//! the EL2 clock read at the vector and only the guest's caller-saved registers (x0..x18,
//! x30) saved: the Rust handler keeps x19..x29 as the procedure call standard says and
//! ELR/SPSR stay in ELR_EL2/SPSR_EL2. Each has its own entry and handler, so none asks again
//! what the vector knew (`ShortExitHandler::interrupt`, `hypercall`, `data_abort`, and
//! `light` for WFx and SMC). When it finishes the exit, those registers are loaded back and
//! the guest runs on at once, without restoring the host's registers, returning to the
//! scheduler and entering it again. When it does not, x19..x29, ELR and SPSR are saved too
//! and the exit goes to the short exit with every register (`ShortExitHandler::exit`: an
//! access naming x19..x29) or returns, exactly as any other. A trapped system register (an
//! SGI sent), which may name any register, has a light entry that stores x19..x29 as well,
//! so that its handler reads the register the syndrome names (`SysregSaved`,
//! `ShortExitHandler::system_register`); they are not loaded back: the CPU still holds them.
//! The clock is read by one instruction (two on a CPU without a PMU): the table and the
//! world switch exist once per clock and `install` and `enter_guest` choose (`read_clock`).
//! Exceptions taken from EL2 itself are Partita bugs and end in a panic. This module must
//! never interpret a trap: decoding belongs to `trap.rs` and `partita_core::trap`.

use core::arch::global_asm;
use core::ffi::c_void;
use core::mem::offset_of;

use aarch64_cpu::registers::{Readable, Writeable, ELR_EL2, ESR_EL2, FAR_EL2, VBAR_EL2};

use partita_core::trap::Register;

/// The guest's register file as the world switch saves and loads it.
#[repr(C, align(16))]
#[derive(Clone, Default)]
pub struct GuestRegs {
    pub x: [u64; 31],
    pub elr: u64,
    pub spsr: u64,
    /// The EL2 clock (`counters`) at the vector of the last exit that returned from
    /// `enter_guest`.
    pub exited: u64,
    /// The EL2 clock just before the last `eret` into the guest: the end of the path the
    /// counters measure (exit to re-entry, the world switch included).
    pub entered: u64,
}

/// Why `enter_guest` returned: which vector of the lower-EL group was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Synchronous,
    Irq,
    Fiq,
    SError,
}

/// The world switch's entry: `(regs, short, call, data_abort, hypercall, interrupt, light,
/// system_register)` → the exit kind (the five light entries' handlers: `light_exit`; the
/// full short exit's: `short_exit`).
type EnterGuest = unsafe extern "C" fn(
    *mut GuestRegs,
    *mut c_void,
    ShortCall,
    LightCall,
    LightCall,
    LightCall,
    LightCall,
    LightCall,
) -> u64;

// One vector table and world switch per EL2 clock (`read_clock` in the assembly): with the
// PMU cycle counter, and with the generic counter on a CPU without a PMU.
extern "C" {
    fn enter_guest_pmu(
        regs: *mut GuestRegs,
        short: *mut c_void,
        call: ShortCall,
        data_abort: LightCall,
        hypercall: LightCall,
        interrupt: LightCall,
        light: LightCall,
        system_register: LightCall,
    ) -> u64;
    fn enter_guest_counter(
        regs: *mut GuestRegs,
        short: *mut c_void,
        call: ShortCall,
        data_abort: LightCall,
        hypercall: LightCall,
        interrupt: LightCall,
        light: LightCall,
        system_register: LightCall,
    ) -> u64;
    static partita_vectors_pmu: u8;
    static partita_vectors_counter: u8;
}

/// How the vectors call the short exit: `(clock, regs, short, exit kind)` → `DONE`, or the
/// exit kind the world switch (`enter_guest`) returns.
type ShortCall = extern "C" fn(u64, *mut GuestRegs, *mut c_void, u64) -> u64;
/// How a light entry calls its `ShortExitHandler` method: `(clock, regs, short)` → its
/// answer (x0, x1).
type LightCall = extern "C" fn(u64, *mut GuestRegs, *mut c_void) -> LightAnswer;

/// A light entry's answer, returned in x0 and x1: a `Light` as u64, or `SWITCHED`, and the
/// register file to enter (the exit's own, or after `SWITCHED` the new vCPU's).
#[repr(C)]
pub struct LightAnswer {
    light: u64,
    regs: *mut GuestRegs,
}

/// The answer of a handler that finished the exit by putting another vCPU on the CPU (a
/// switch inside the world switch): the guest that exited keeps the registers the vector
/// did not save (x19..x29, still in the CPU, and ELR_EL2 and SPSR_EL2, which the handler
/// may have moved past the trapped instruction) and its exit's clock in its register file,
/// and the world switch enters the new vCPU's (`LightAnswer::switched`). The light entries'
/// assembly compares with this value (`light_general`).
const SWITCHED: u64 = 4;

impl LightAnswer {
    /// `light` for the exit whose register file is `regs`.
    #[inline(always)]
    pub fn new(light: Light, regs: *mut GuestRegs) -> Self {
        LightAnswer {
            light: light as u64,
            regs,
        }
    }

    /// The exit finished by a switch to the vCPU whose register file is `regs` (`SWITCHED`).
    /// It must stay valid and not be touched by anything but the world switch and its
    /// handlers until `enter_guest` returns.
    #[inline(always)]
    pub fn switched(regs: *mut GuestRegs) -> Self {
        LightAnswer {
            light: SWITCHED,
            regs,
        }
    }
}

/// Which `ShortExitHandler` method a light entry's handler calls (`light_exit`): each entry
/// has its own, so that no handler asks again which exit it has.
const DATA_ABORT: u8 = 0;
const HYPERCALL: u8 = 1;
const INTERRUPT: u8 = 2;
const WFX_SMC: u8 = 3;
const SYSTEM_REGISTER: u8 = 4;

/// The short exits of an entered vCPU (`enter_guest`).
pub trait ShortExitHandler {
    /// A physical IRQ, or a WFI, data abort, HVC, SMC or trapped system register from the
    /// guest, taken at `start` (`counters`'s clock) with every guest register saved in
    /// `regs` (after `Light::AllRegisters`): `Handled::Done` when it did everything the exit
    /// needed, and the guest goes straight back in with the registers as it left them;
    /// `Handled::Return` returns an exit from `enter_guest` (`exit` itself when the short
    /// exit did nothing).
    fn exit(&mut self, regs: &mut GuestRegs, start: u64, exit: Exit) -> Handled;

    /// A trapped system register access (ESR_EL2.EC 0x18) taken at `start`, with the
    /// guest's caller-saved registers saved and x19..x29 stored (`SysregSaved`), its quick
    /// part: code with no call in it, as `interrupt_quick`'s. `Some` when it finished the
    /// exit; `None` when it changed nothing but what `system_register` finds done (the
    /// counters' settling), which then takes the exit.
    fn system_register_quick(&mut self, regs: &mut SysregSaved, start: u64) -> Option<Light>;

    /// A trapped system register access that `system_register_quick` did not finish:
    /// `light` for it, which the vector knows already.
    fn system_register(&mut self, regs: &mut SysregSaved, start: u64) -> Light;

    /// A WFx or SMC from the guest, taken at `start`, asked first, with only the guest's
    /// caller-saved registers saved and ELR and SPSR in ELR_EL2 and SPSR_EL2
    /// (`CallerSaved`). Whatever it does not finish it must leave untouched, except as
    /// `Light::Interrupted` says. It may switch (`LightAnswer::switched`), so it answers
    /// whole: the handlers it ends in return the answer (the light entry makes no frame).
    fn light(&mut self, regs: &mut CallerSaved, start: u64) -> LightAnswer;

    /// An HVC from the guest taken at `start`: `light` for the HVC, which the vector
    /// knows already.
    fn hypercall(&mut self, regs: &mut CallerSaved, start: u64) -> Light;

    /// What the quick part of a physical IRQ leaves to `interrupt`: the vCPU's own
    /// interrupt, acknowledged, to inject.
    type Own;
    /// What it leaves to `interrupt_other`: any other interrupt it acknowledged.
    type Other;

    /// A physical IRQ taken at `start`, its quick part: code with no call in it, so that
    /// its handler (`light_exit`) needs no frame of callee-saved registers. `Done` when it
    /// finished the exit, else what `interrupt` or `interrupt_other` takes on.
    fn interrupt_quick(
        &mut self,
        regs: &mut CallerSaved,
        start: u64,
    ) -> Quick<Self::Own, Self::Other>;

    /// The vCPU's own physical IRQ that `interrupt_quick` did not finish (`own`), taken at
    /// `start`: `light` for the IRQ vector (an injection touches no guest register).
    fn interrupt(&mut self, start: u64, own: Self::Own) -> Light;

    /// Any other physical IRQ (`other`): `light` for the IRQ vector. Apart from `interrupt`,
    /// so that its way (to the general path, or to a switch) keeps only the registers it
    /// needs, not the injection's.
    fn interrupt_other(
        &mut self,
        regs: &mut CallerSaved,
        start: u64,
        other: Self::Other,
    ) -> LightAnswer;

    /// A data abort from the guest taken at `start`: `light` for the data abort, which the
    /// vector knows already.
    fn data_abort(&mut self, regs: &mut CallerSaved, start: u64) -> Light;
}

/// What `ShortExitHandler::exit` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handled {
    /// Finished: the guest's registers are loaded back and it runs on.
    Done,
    /// `enter_guest` returns this exit to the general path.
    Return(Exit),
}

/// `short_exit`'s answer for `Handled::Done` (the exit kinds are 0..=3).
const DONE: u64 = 4;

/// How far the quick part of a physical IRQ went (`ShortExitHandler::interrupt_quick`).
pub enum Quick<O, X> {
    /// It finished the exit.
    Done(Light),
    /// It left the vCPU's own interrupt (`ShortExitHandler::interrupt`).
    Own(O),
    /// It left another (`ShortExitHandler::interrupt_other`).
    Other(X),
}

/// What `ShortExitHandler::light` and `ShortExitHandler::data_abort` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum Light {
    /// Nothing: `enter_guest` returns the exit as it was taken to the general path.
    General = 0,
    /// Finished: the guest's caller-saved registers are loaded back and it runs on (at
    /// ELR_EL2, which the short exit may have moved past the instruction).
    Done = 1,
    /// Nothing, because the exit needs a register that was not saved: every register is
    /// saved and the exit goes to `ShortExitHandler::exit`.
    AllRegisters = 2,
    /// The exit (a WFI) is finished as far as the guest goes (ELR_EL2 moved past it), and
    /// a physical interrupt that is not this VM's arrived meanwhile: `enter_guest` returns
    /// `Exit::Irq`.
    Interrupted = 3,
}

/// The guest's register file at a light short exit (`ShortExitHandler::light`): x0..x18 and x30 hold the guest's
/// values; x19..x29, ELR and SPSR do not (the guest's are still in the CPU's registers, kept
/// by the Rust code as callee-saved, and in ELR_EL2 and SPSR_EL2), so x19..x29 can be
/// neither read nor written here and ELR moves in ELR_EL2 (`advance`).
#[repr(transparent)]
pub struct CallerSaved(GuestRegs);

impl CallerSaved {
    /// Whether `r` can be read and written here (XZR always: it reads as zero).
    #[inline]
    fn holds(r: Register) -> bool {
        match r {
            Register::X(n) => !(19..=29).contains(&n),
            Register::Zero => true,
        }
    }

    /// The value of register `r`, if it is saved (`holds`).
    #[inline]
    pub fn get(&self, r: Register) -> Option<u64> {
        Self::holds(r).then(|| self.0.get(r))
    }

    /// Writes register `r` if it is saved (`holds`).
    #[inline]
    pub fn set(&mut self, r: Register, value: u64) {
        if Self::holds(r) {
            self.0.set(r, value);
        }
    }

    /// The guest's x0..x18.
    #[inline]
    pub fn caller_saved(&mut self) -> &mut [u64] {
        self.0.caller_saved_mut()
    }

    /// The EL2 clock just before the guest was last entered (`GuestRegs::entered`).
    #[inline]
    pub fn entered(&self) -> u64 {
        self.0.entered
    }

    /// The whole register file (for the world switch: `LightAnswer`, a switch's old file).
    #[inline]
    pub fn file(&mut self) -> *mut GuestRegs {
        core::ptr::from_mut(&mut self.0)
    }

    /// Moves the guest's ELR (ELR_EL2, loaded by the `eret`) past the trapped instruction
    /// of `len` bytes.
    #[inline]
    pub fn advance(&mut self, len: u64) {
        ELR_EL2.set(ELR_EL2.get().wrapping_add(len));
    }
}

/// The guest's register file at a trapped system register's light exit
/// (`ShortExitHandler::system_register`): `CallerSaved`, and x19..x29 stored as well, so
/// that every register can be read (the one an MSR names may be any). Those are not loaded
/// back (the guest's are still in the CPU's registers), so they cannot be written here.
#[repr(transparent)]
pub struct SysregSaved(CallerSaved);

impl SysregSaved {
    /// The value of register `r` (XZR reads as zero).
    #[inline]
    pub fn get(&self, r: Register) -> u64 {
        self.0 .0.get(r)
    }

    /// The EL2 clock just before the guest was last entered (`GuestRegs::entered`).
    #[inline]
    pub fn entered(&self) -> u64 {
        self.0.entered()
    }

    /// Moves the guest's ELR (ELR_EL2) past the trapped instruction of `len` bytes.
    #[inline]
    pub fn advance(&mut self, len: u64) {
        self.0.advance(len);
    }
}

/// Runs the guest with `regs` until it traps to EL2 with an exit `short` does not finish
/// (`ShortExitHandler`).
pub fn enter_guest<S: ShortExitHandler>(regs: &mut GuestRegs, short: &mut S) -> Exit {
    let call: ShortCall = short_exit::<S>;
    let system_register: LightCall = light_exit::<S, SYSTEM_REGISTER>;
    let data_abort: LightCall = light_exit::<S, DATA_ABORT>;
    let hypercall: LightCall = light_exit::<S, HYPERCALL>;
    let interrupt: LightCall = light_exit::<S, INTERRUPT>;
    let light: LightCall = light_exit::<S, WFX_SMC>;
    let short = core::ptr::from_mut(short).cast::<c_void>();
    // The world switch of this CPU's clock, as `install` chose its vectors.
    let enter: EnterGuest = if crate::counters::has_pmu() {
        enter_guest_pmu
    } else {
        enter_guest_counter
    };
    // SAFETY: `regs` is a valid, exclusively borrowed register file for the duration of the
    // call; the assembly saves and restores every callee-saved register of the host and
    // returns on the same stack. `short` is an exclusively borrowed `S`, used only by
    // the handlers (`short_exit`, `light_exit`) during the call.
    // Stage 2, HCR_EL2 and the EL1 context of this guest are loaded by the caller, so the
    // guest can only reach its own memory.
    let kind = unsafe {
        enter(
            regs,
            short,
            call,
            data_abort,
            hypercall,
            interrupt,
            light,
            system_register,
        )
    };
    Exit::from_kind(kind)
}

impl Exit {
    /// The exit of the lower-EL vector `kind` (its offset in the group / 0x80).
    fn from_kind(kind: u64) -> Exit {
        match kind {
            0 => Exit::Synchronous,
            1 => Exit::Irq,
            2 => Exit::Fiq,
            _ => Exit::SError,
        }
    }

    /// The lower-EL vector's kind of this exit (`from_kind`'s inverse).
    fn kind(self) -> u64 {
        match self {
            Exit::Synchronous => 0,
            Exit::Irq => 1,
            Exit::Fiq => 2,
            Exit::SError => 3,
        }
    }
}

/// Called by the vectors with the guest's registers saved and the host's not yet restored
/// (on the EL2 stack below the world switch's frame), for an exit a light entry's handler
/// handed over with `Light::AllRegisters`: `DONE` when `short` finished the exit and the
/// guest is loaded back, else the kind of the exit the world switch returns.
extern "C" fn short_exit<S: ShortExitHandler>(
    start: u64,
    regs: *mut GuestRegs,
    short: *mut c_void,
    kind: u64,
) -> u64 {
    // SAFETY: `enter_guest` passed these two pointers to the world switch, which is still
    // running: `regs` is its exclusively borrowed register file (the guest is not running,
    // the assembly touches it again only after this returns) and `short` its `&mut S`.
    let (regs, short) = unsafe { (&mut *regs, &mut *short.cast::<S>()) };
    match short.exit(regs, start, Exit::from_kind(kind)) {
        Handled::Done => DONE,
        Handled::Return(exit) => exit.kind(),
    }
}

/// Called by a light entry (`ENTRY`: the data abort, the HVC, the IRQ, a WFx or SMC, or a
/// trapped system register) with the guest's caller-saved registers saved (`CallerSaved`;
/// for a system register x19..x29 stored too, `SysregSaved`): what `short` did, as `Light`'s
/// value.
extern "C" fn light_exit<S: ShortExitHandler, const ENTRY: u8>(
    start: u64,
    regs: *mut GuestRegs,
    short: *mut c_void,
) -> LightAnswer {
    // SAFETY: as in `short_exit`: the world switch is running, `regs` is its exclusively
    // borrowed register file and `short` its `&mut S`. `CallerSaved` and `SysregSaved` are
    // transparent wrappers of `GuestRegs`, so the casts keep layout and validity; the
    // system register's entry (`guest_sysreg`) stored x19..x29, as `SysregSaved` says.
    let short = unsafe { &mut *short.cast::<S>() };
    // The IRQ and the system register have a quick part (`interrupt_quick`,
    // `system_register_quick`), which calls nothing: the rest of their exit is out of line
    // (`interrupt_exit` or `interrupt_other_exit`, `system_register_exit`), so that the
    // quick part makes no frame.
    if ENTRY == INTERRUPT {
        // SAFETY: as above.
        let saved = unsafe { &mut *regs.cast::<CallerSaved>() };
        return match short.interrupt_quick(saved, start) {
            Quick::Done(light) => LightAnswer::new(light, regs),
            Quick::Own(own) => interrupt_exit(start, regs, short, own),
            Quick::Other(other) => interrupt_other_exit(start, regs, short, other),
        };
    }
    if ENTRY == SYSTEM_REGISTER {
        // SAFETY: as above.
        let saved = unsafe { &mut *regs.cast::<SysregSaved>() };
        return match short.system_register_quick(saved, start) {
            Some(light) => LightAnswer::new(light, regs),
            None => system_register_exit(start, regs, short),
        };
    }
    // SAFETY: as above.
    let saved = unsafe { &mut *regs.cast::<CallerSaved>() };
    match ENTRY {
        DATA_ABORT => LightAnswer::new(short.data_abort(saved, start), regs),
        HYPERCALL => LightAnswer::new(short.hypercall(saved, start), regs),
        _ => short.light(saved, start),
    }
}

/// The IRQ's light entry (`light_exit`) after a quick part that left the vCPU's own
/// interrupt to inject (`ShortExitHandler::interrupt`).
#[inline(never)]
fn interrupt_exit<S: ShortExitHandler>(
    start: u64,
    regs: *mut GuestRegs,
    short: &mut S,
    own: S::Own,
) -> LightAnswer {
    LightAnswer::new(short.interrupt(start, own), regs)
}

/// The IRQ's light entry (`light_exit`) after a quick part that left another interrupt
/// (`ShortExitHandler::interrupt_other`).
#[inline(never)]
fn interrupt_other_exit<S: ShortExitHandler>(
    start: u64,
    regs: *mut GuestRegs,
    short: &mut S,
    other: S::Other,
) -> LightAnswer {
    // SAFETY: as in `light_exit`, whose arguments these are.
    let saved = unsafe { &mut *regs.cast::<CallerSaved>() };
    short.interrupt_other(saved, start, other)
}

/// The system register's light entry (`light_exit`) after a quick part that did not finish
/// it (`ShortExitHandler::system_register_quick`).
#[inline(never)]
fn system_register_exit<S: ShortExitHandler>(
    start: u64,
    regs: *mut GuestRegs,
    short: &mut S,
) -> LightAnswer {
    // SAFETY: as in `light_exit`, whose arguments these are; its system register entry
    // (`guest_sysreg`) stored x19..x29.
    let saved = unsafe { &mut *regs.cast::<SysregSaved>() };
    LightAnswer::new(short.system_register(saved, start), regs)
}

/// Points VBAR_EL2 at Partita's vector table on this CPU: the one whose clock this CPU has
/// (`counters::has_pmu`).
pub fn install() {
    let base = if crate::counters::has_pmu() {
        core::ptr::addr_of!(partita_vectors_pmu)
    } else {
        core::ptr::addr_of!(partita_vectors_counter)
    } as u64;
    VBAR_EL2.set(base);
    aarch64_cpu::asm::barrier::isb(aarch64_cpu::asm::barrier::SY);
}

/// An exception taken at EL2: Partita itself is broken.
#[no_mangle]
extern "C" fn el2_exception(kind: u64) -> ! {
    panic!(
        "EL2 exception (vector {kind}): ESR_EL2 {:#x}, ELR_EL2 {:#x}, FAR_EL2 {:#x}",
        ESR_EL2.get(),
        ELR_EL2.get(),
        FAR_EL2.get()
    );
}

global_asm!(
    r#"
.macro el2_vector kind
    .balign 0x80
    mov     x0, #\kind
    b       el2_exception
.endm

.macro guest_vector kind, clock
    .balign 0x80
    stp     x0, x1, [sp, #-32]!
    stp     x2, x3, [sp, #16]
    mov     x3, #\kind
    b       guest_exit_\clock
.endm

// A physical IRQ: the light short exit is asked first.
.macro guest_irq_vector clock
    .balign 0x80
    stp     x0, x1, [sp, #-32]!
    mov     x1, #1
    b       guest_irq_\clock
.endm

// Synchronous, from AArch64 at EL1/EL0: a data abort (EC 0x24), a trapped system register
// (0x18) and an HVC (0x16) take their own light entries (`guest_data_abort`, `guest_sysreg`,
// `guest_hvc`), WFx (0x01) or SMC (0x17) the shared one (`guest_light`), all with the
// guest's x2..x30 still live; any other returns. The classes are tested in the order WFx
// (first: a real-time VM's WFI hands its shared CPU over, the vCPU switch that is every
// tick's), data abort, system register (a self-SGI: Thread-Metric's and Rhealstone's
// interrupt tests), HVC, then SMC.
.macro guest_sync_vector clock
    .balign 0x80
    stp     x0, x1, [sp, #-32]!
    mrs     x0, esr_el2
    lsr     x0, x0, #26
    cmp     x0, #0x01
    b.eq    guest_light_\clock
    cmp     x0, #0x24
    b.eq    guest_data_abort_\clock
    cmp     x0, #0x18
    b.eq    guest_sysreg_\clock
    cmp     x0, #0x16
    b.eq    guest_hvc_\clock
    cmp     x0, #0x17
    b.eq    guest_light_\clock
    stp     x2, x3, [sp, #16]
    mov     x3, #0
    b       guest_exit_\clock
.endm

// Reads the EL2 clock `clock` into \reg as `counters` does: the PMU cycle counter (`pmu`),
// or the generic counter times 16 (`counter`). The choice is made once, by the table
// `install` points VBAR_EL2 at and the entry `enter_guest` calls: one instruction (two) here.
.macro read_clock reg, clock
.ifc \clock, pmu
    mrs     \reg, pmccntr_el0
.else
    mrs     \reg, cntpct_el0
    lsl     \reg, \reg, #4
.endif
.endm

// Stores the guest's registers into `GuestRegs` at x1: x4..x30 as they are, x0..x3 from
// the vector's push (popped), ELR and SPSR. Clobbers x4, x5.
.macro save_guest
    stp     x4, x5, [x1, #32]
    stp     x6, x7, [x1, #48]
    stp     x8, x9, [x1, #64]
    stp     x10, x11, [x1, #80]
    stp     x12, x13, [x1, #96]
    stp     x14, x15, [x1, #112]
    stp     x16, x17, [x1, #128]
    stp     x18, x19, [x1, #144]
    stp     x20, x21, [x1, #160]
    stp     x22, x23, [x1, #176]
    stp     x24, x25, [x1, #192]
    stp     x26, x27, [x1, #208]
    stp     x28, x29, [x1, #224]
    str     x30, [x1, #240]
    ldp     x4, x5, [sp], #16
    stp     x4, x5, [x1, #0]
    ldp     x4, x5, [sp], #16
    stp     x4, x5, [x1, #16]
    mrs     x4, elr_el2
    mrs     x5, spsr_el2
    stp     x4, x5, [x1, #{elr}]
.endm

// A light entry `\name\()_\clock` (`world_switch`): the kind in \kind, the handler at
// [sp, #\call] above the vector's push; with \callee 1, x19..x29 are stored too.
.macro light_entry name, kind, call, clock, callee=0
\name\()_\clock:
    read_clock x0, \clock
    stp     x0, \kind, [sp, #16]
    ldr     x1, [sp, #32]
    save_caller
.if \callee
    save_callee
.endif
    ldr     x2, [sp, #40]
    ldr     x3, [sp, #(32 + \call)]
    blr     x3
    cmp     x0, #1
    b.ne    light_general_\clock
    add     sp, sp, #32
    ldr     x0, [sp]
    ldp     x2, x3, [x0, #16]
    ldp     x4, x5, [x0, #32]
    ldp     x6, x7, [x0, #48]
    ldp     x8, x9, [x0, #64]
    ldp     x10, x11, [x0, #80]
    ldp     x12, x13, [x0, #96]
    ldp     x14, x15, [x0, #112]
    ldp     x16, x17, [x0, #128]
    ldr     x18, [x0, #144]
    ldr     x30, [x0, #240]
    read_clock x1, \clock
    str     x1, [x0, #{entered}]
    ldp     x0, x1, [x0, #0]
    eret
    dsb     nsh
    isb
.endm

// Stores the guest's caller-saved registers into `GuestRegs` at x1: x2..x18 and x30 as they
// are, x0 and x1 from the vector's push (kept). Clobbers x2, x3.
.macro save_caller
    stp     x2, x3, [x1, #16]
    stp     x4, x5, [x1, #32]
    stp     x6, x7, [x1, #48]
    stp     x8, x9, [x1, #64]
    stp     x10, x11, [x1, #80]
    stp     x12, x13, [x1, #96]
    stp     x14, x15, [x1, #112]
    stp     x16, x17, [x1, #128]
    str     x18, [x1, #144]
    str     x30, [x1, #240]
    ldp     x2, x3, [sp]
    stp     x2, x3, [x1, #0]
.endm

// Stores the guest's x19..x29 into `GuestRegs` at x1.
.macro save_callee
    stp     x19, x20, [x1, #152]
    stp     x21, x22, [x1, #168]
    stp     x23, x24, [x1, #184]
    stp     x25, x26, [x1, #200]
    stp     x27, x28, [x1, #216]
    str     x29, [x1, #232]
.endm

// The vector table and the world switch for the clock `clock` (`read_clock`):
// `partita_vectors_\clock` and `enter_guest_\clock`.
.macro world_switch clock
.section .text.vectors_\clock, "ax"
.balign 0x800
.global partita_vectors_\clock
partita_vectors_\clock:
    el2_vector 0
    el2_vector 1
    el2_vector 2
    el2_vector 3
    el2_vector 4
    el2_vector 5
    el2_vector 6
    el2_vector 7
    guest_sync_vector \clock
    guest_irq_vector \clock
    guest_vector 2, \clock
    guest_vector 3, \clock
    guest_vector 0, \clock
    guest_vector 1, \clock
    guest_vector 2, \clock
    guest_vector 3, \clock

// `enter_guest_\clock(regs, short, call, data_abort, hypercall, interrupt, light,
// system_register)`: its frame, above the host's callee-saved registers, holds the eight
// arguments (regs at [sp], short at [sp, #8], call at [sp, #16], then the light entries'
// handlers: data_abort at [sp, #24], hypercall at [sp, #32], interrupt at [sp, #40], light
// at [sp, #48], and system_register at [sp, #56]); while the guest runs, a vector's push of
// 32 bytes lies below it.
.section .text.enter_guest_\clock, "ax"
.global enter_guest_\clock
enter_guest_\clock:
    stp     x29, x30, [sp, #-16]!
    stp     x27, x28, [sp, #-16]!
    stp     x25, x26, [sp, #-16]!
    stp     x23, x24, [sp, #-16]!
    stp     x21, x22, [sp, #-16]!
    stp     x19, x20, [sp, #-16]!
    stp     x6, x7, [sp, #-16]!
    stp     x4, x5, [sp, #-16]!
    stp     x2, x3, [sp, #-16]!
    stp     x0, x1, [sp, #-16]!

// Loads the guest's registers from x0 and enters it.
load_guest_\clock:
    ldp     x2, x3, [x0, #{elr}]
    msr     elr_el2, x2
    msr     spsr_el2, x3

    ldp     x2, x3, [x0, #16]
    ldp     x4, x5, [x0, #32]
    ldp     x6, x7, [x0, #48]
    ldp     x8, x9, [x0, #64]
    ldp     x10, x11, [x0, #80]
    ldp     x12, x13, [x0, #96]
    ldp     x14, x15, [x0, #112]
    ldp     x16, x17, [x0, #128]
    ldp     x18, x19, [x0, #144]
    ldp     x20, x21, [x0, #160]
    ldp     x22, x23, [x0, #176]
    ldp     x24, x25, [x0, #192]
    ldp     x26, x27, [x0, #208]
    ldp     x28, x29, [x0, #224]
    ldr     x30, [x0, #240]
    read_clock x1, \clock
    str     x1, [x0, #{entered}]
    ldp     x0, x1, [x0, #0]
    eret
    dsb     nsh
    isb

// Calls the short exit `call(clock, regs, short, kind)` with every guest register saved in
// `GuestRegs` at x1, the vector's push popped, the clock in x2 and the kind in x3: it
// answers `DONE` (the guest is loaded back) or the kind of the exit to return.
short_call_\clock:
    ldr     x4, [sp, #16]
    mov     x0, x2
    ldr     x2, [sp, #8]
    blr     x4
    cmp     x0, #{done}
    b.ne    restore_host_\clock
    ldr     x0, [sp]
    b       load_guest_\clock

// The light entries, entered from a vector with the guest's x0, x1 pushed (32 bytes), the
// exit kind in x1 for an IRQ (1; every synchronous one's is 0, `xzr`) and x2..x30 live: each
// reads the clock, saves the guest's caller-saved registers (x0..x18, x30) and calls its
// handler `(clock, regs, short)` (`enter_guest_\clock`'s argument at [sp, #\call] once the
// push is taken off). The Rust code keeps x19..x29 (AAPCS64) and ELR_EL2 and SPSR_EL2 hold
// the guest's (EL2 takes no exception it returns from; a finished exit moves ELR_EL2
// itself). Its answer, a `Light`, finishes the entry: after `Light::Done` (1) only the saved
// registers are loaded back and the guest runs on; otherwise the exit goes on at
// `light_general_\clock`. The push's free half keeps the clock and the kind.
light_entry guest_irq, x1, 40, \clock
light_entry guest_hvc, xzr, 32, \clock
light_entry guest_light, xzr, 48, \clock
light_entry guest_data_abort, xzr, 24, \clock
light_entry guest_sysreg, xzr, 56, \clock, 1
// A light entry's handler did not finish the exit (`Light` in x0 not `Done`): x19..x29, ELR
// and SPSR are saved as well and the exit goes to the general short exit (`AllRegisters`,
// 2, with the same clock and kind), returns to the host (`General`, 0, with the kind as
// taken; `Interrupted`, 3, as an IRQ), or enters the vCPU the handler switched to
// (`SWITCHED`, its register file in x1).
light_general_\clock:
    cmp     x0, #{switched}
    b.eq    light_switch_\clock
    ldr     x1, [sp, #32]
    save_callee
    mrs     x4, elr_el2
    mrs     x5, spsr_el2
    stp     x4, x5, [x1, #{elr}]
    ldp     x2, x3, [sp, #16]
    str     x2, [x1, #{exited}]
    add     sp, sp, #32
    cmp     x0, #2
    b.eq    short_call_\clock
    b.hi    5f
    mov     x0, x3
    b       restore_host_\clock
5:  mov     x0, #1
    b       restore_host_\clock

// The handler switched the CPU to the vCPU whose register file is at x1 (`SWITCHED`):
// the guest that exited keeps x19..x29, ELR, SPSR and its exit's clock in its own (the
// frame's), the frame takes the new one, and the new vCPU is entered.
light_switch_\clock:
    mov     x6, x1
    ldr     x1, [sp, #32]
    save_callee
    mrs     x4, elr_el2
    mrs     x5, spsr_el2
    stp     x4, x5, [x1, #{elr}]
    ldr     x2, [sp, #16]
    str     x2, [x1, #{exited}]
    add     sp, sp, #32
    str     x6, [sp]
    mov     x0, x6
    b       load_guest_\clock

// Entered from a guest vector with the guest's x0..x3 pushed and the exit kind in x3.
guest_exit_\clock:
    read_clock x2, \clock
    ldr     x1, [sp, #32]
    str     x2, [x1, #{exited}]
    save_guest
    mov     x0, x3

// Returns from `enter_guest_\clock` with the exit kind in x0.
restore_host_\clock:
    add     sp, sp, #64
    ldp     x19, x20, [sp], #16
    ldp     x21, x22, [sp], #16
    ldp     x23, x24, [sp], #16
    ldp     x25, x26, [sp], #16
    ldp     x27, x28, [sp], #16
    ldp     x29, x30, [sp], #16
    ret
.endm

world_switch pmu
world_switch counter
"#,
    elr = const offset_of!(GuestRegs, elr),
    done = const DONE,
    switched = const SWITCHED,
    exited = const offset_of!(GuestRegs, exited),
    entered = const offset_of!(GuestRegs, entered),
);

const _: () = {
    assert!(offset_of!(GuestRegs, elr) == 248);
    assert!(offset_of!(GuestRegs, spsr) == 256);
    // `light_general` tells a switch from every `Light` (the largest, `Interrupted`, 3).
    assert!(SWITCHED > Light::Interrupted as u64);
};
