//! A job as the emulated fabric runs it: decoded from the registers a VM wrote to its
//! interface page (or from a sealed context at resume), with both buffers translated through
//! that VM's memory and bounds-checked before a single byte moves, and advanced one frame at
//! a time (the consistency points where a task may be preempted).
//!
//! Everything here comes from a guest and is checked: a size that is not a whole, non-zero
//! number of frames, an output buffer too small, or a buffer that is not entirely inside one
//! of the VM's RAM regions is refused with the STAT error bit the VM will read.

use super::functions::Function;
use super::interface::{stat, Context, FNV_OFFSET};
use super::DevId;

/// Most frames one job may ask for: bounds how long a region is busy with one request.
pub const MAX_FRAMES: u32 = 64;

/// What the VM wrote before setting START.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Registers {
    pub cmd: u32,
    pub data_addr: u32,
    pub data_size: u32,
    pub out_addr: u32,
    pub out_size: u32,
}

/// A running (or resumed) job of one region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Job {
    pub dev: DevId,
    pub function: Function,
    pub registers: Registers,
    /// Physical addresses of the two buffers (translated through the VM's memory).
    pub in_phys: u64,
    pub out_phys: u64,
    pub frames: u32,
    pub frames_done: u32,
    /// FNV-1a of the output so far: RESULT when the job is over.
    pub result: u64,
}

/// Where a frame's bytes lie, physically.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameBuffers {
    pub input: u64,
    pub input_len: usize,
    pub output: u64,
    pub output_len: usize,
}

impl Job {
    /// The job the registers describe; `translate(ipa, len)` is the physical address of
    /// `len` bytes at guest-physical `ipa` when they all lie in one RAM region of the VM.
    /// The error is the STAT bit to report.
    pub fn start(
        dev: DevId,
        function: Function,
        registers: Registers,
        translate: impl Fn(u64, u64) -> Option<u64>,
    ) -> Result<Job, u32> {
        Job::resume(dev, function, registers, 0, FNV_OFFSET, translate)
    }

    /// The job of a context saved at a consistency point, its buffers checked again.
    pub fn from_context(
        context: &Context,
        function: Function,
        translate: impl Fn(u64, u64) -> Option<u64>,
    ) -> Result<Job, u32> {
        let registers = Registers {
            cmd: context.cmd,
            data_addr: context.in_addr,
            data_size: context.in_size,
            out_addr: context.out_addr,
            out_size: context.out_size,
        };
        Job::resume(
            context.dev,
            function,
            registers,
            context.frames_done,
            context.result,
            translate,
        )
    }

    fn resume(
        dev: DevId,
        function: Function,
        registers: Registers,
        frames_done: u32,
        result: u64,
        translate: impl Fn(u64, u64) -> Option<u64>,
    ) -> Result<Job, u32> {
        let in_frame = function.input_frame() as u64;
        let out_frame = function.output_frame() as u64;
        let size = u64::from(registers.data_size);
        let frames = size / in_frame;
        if size == 0 || !size.is_multiple_of(in_frame) || frames > u64::from(MAX_FRAMES) {
            return Err(stat::ERR_SIZE);
        }
        if u64::from(registers.out_size) < frames * out_frame || u64::from(frames_done) > frames {
            return Err(stat::ERR_SIZE);
        }
        let in_phys = translate(u64::from(registers.data_addr), size).ok_or(stat::ERR_DMA)?;
        let out_phys =
            translate(u64::from(registers.out_addr), frames * out_frame).ok_or(stat::ERR_DMA)?;
        Ok(Job {
            dev,
            function,
            registers,
            in_phys,
            out_phys,
            frames: frames as u32,
            frames_done,
            result,
        })
    }

    /// The buffers of the next frame, `None` when every frame is done.
    pub fn next_frame(&self) -> Option<FrameBuffers> {
        if self.frames_done >= self.frames {
            return None;
        }
        let i = u64::from(self.frames_done);
        let input_len = self.function.input_frame();
        let output_len = self.function.output_frame();
        Some(FrameBuffers {
            input: self.in_phys + i * input_len as u64,
            input_len,
            output: self.out_phys + i * output_len as u64,
            output_len,
        })
    }

    /// The next frame was computed into `output`: a consistency point.
    pub fn frame_done(&mut self, output: &[u8]) {
        self.result = super::interface::fnv1a(self.result, output);
        self.frames_done += 1;
    }

    pub fn finished(&self) -> bool {
        self.frames_done >= self.frames
    }

    /// What is saved when the job is preempted.
    pub fn context(&self) -> Context {
        Context {
            dev: self.dev,
            cmd: self.registers.cmd,
            in_addr: self.registers.data_addr,
            in_size: self.registers.data_size,
            out_addr: self.registers.out_addr,
            out_size: self.registers.out_size,
            frames_done: self.frames_done,
            result: self.result,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accel::interface::fnv1a;

    /// One RAM region: 16 MiB at 0x4000_0000, backed at 0x8000_0000.
    fn ram(ipa: u64, len: u64) -> Option<u64> {
        let (base, size) = (0x4000_0000u64, 0x100_0000u64);
        (ipa >= base && len <= size && ipa - base <= size - len).then(|| ipa - base + 0x8000_0000)
    }

    fn regs(frames: u32) -> Registers {
        Registers {
            cmd: 0,
            data_addr: 0x4010_0000,
            data_size: frames * 2_350,
            out_addr: 0x4020_0000,
            out_size: frames * 18_800,
        }
    }

    #[test]
    fn buffers_are_translated_and_walked_frame_by_frame() {
        let mut job = Job::start(0, Function::Qam16, regs(2), ram).unwrap();
        assert_eq!(job.frames, 2);
        let f = job.next_frame().unwrap();
        assert_eq!((f.input, f.output), (0x8010_0000, 0x8020_0000));
        job.frame_done(&[1, 2, 3]);
        let f = job.next_frame().unwrap();
        assert_eq!(
            (f.input, f.output),
            (0x8010_0000 + 2_350, 0x8020_0000 + 18_800)
        );
        job.frame_done(&[4]);
        assert!(job.finished() && job.next_frame().is_none());
        assert_eq!(job.result, fnv1a(fnv1a(FNV_OFFSET, &[1, 2, 3]), &[4]));
    }

    #[test]
    fn sizes_must_be_whole_frames_and_outputs_large_enough() {
        let mut r = regs(1);
        r.data_size = 2_349;
        assert_eq!(Job::start(0, Function::Qam16, r, ram), Err(stat::ERR_SIZE));
        r.data_size = 0;
        assert_eq!(Job::start(0, Function::Qam16, r, ram), Err(stat::ERR_SIZE));
        let mut r = regs(1);
        r.out_size -= 1;
        assert_eq!(Job::start(0, Function::Qam16, r, ram), Err(stat::ERR_SIZE));
        let r = regs(MAX_FRAMES + 1);
        assert_eq!(Job::start(0, Function::Qam16, r, ram), Err(stat::ERR_SIZE));
    }

    #[test]
    fn buffers_outside_the_vm_are_refused() {
        for (addr, out) in [
            (0x0800_0000, 0x4020_0000),
            (0x4010_0000, 0x40ff_f000),
            (0x40ff_ffff, 0x4020_0000),
            (0xffff_f000, 0x4020_0000),
        ] {
            let r = Registers {
                data_addr: addr,
                out_addr: out,
                ..regs(1)
            };
            assert_eq!(
                Job::start(0, Function::Qam16, r, ram),
                Err(stat::ERR_DMA),
                "{addr:#x} {out:#x}"
            );
        }
    }

    #[test]
    fn a_context_resumes_where_it_stopped_and_is_checked_again() {
        let mut job = Job::start(3, Function::Qam16, regs(3), ram).unwrap();
        job.frame_done(&[7; 10]);
        let context = job.context();
        let resumed = Job::from_context(&context, Function::Qam16, ram).unwrap();
        assert_eq!(resumed, job);
        let bad = Context {
            frames_done: 4,
            ..context
        };
        assert_eq!(
            Job::from_context(&bad, Function::Qam16, ram),
            Err(stat::ERR_SIZE)
        );
        let outside = Context {
            in_addr: 0x1000,
            ..context
        };
        assert_eq!(
            Job::from_context(&outside, Function::Qam16, ram),
            Err(stat::ERR_DMA)
        );
    }
}
