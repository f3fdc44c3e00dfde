//! SQLite's memory from the process's allocator (Rust's global allocator) instead of the C
//! library's `malloc`: a server that installs a fast allocator (billing-server installs
//! mimalloc) gets it for SQLite's allocations too, which were about a tenth of the instructions
//! of a paid checkout attempt under glibc's `malloc` (callgrind).
//!
//! Each block carries its size in a 16-byte header (which also keeps the 8-byte alignment SQLite
//! needs), so `xSize` and `xFree` know the layout Rust's allocator asks for.

use rusqlite::ffi;
use std::alloc::{alloc, dealloc, realloc, Layout};
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether SQLite took the methods (it refuses them once initialized).
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Whether SQLite's memory comes from the process's allocator in this process.
pub fn installed() -> bool {
    INSTALLED.load(Ordering::Acquire)
}

const HEADER: usize = 16;
const ALIGN: usize = 16;

fn layout(n: usize) -> Layout {
    // SAFETY of the callers: n + HEADER never overflows (n comes from a positive c_int), and
    // ALIGN is a power of two.
    unsafe { Layout::from_size_align_unchecked(n + HEADER, ALIGN) }
}

/// The block's start (its header) from the pointer SQLite holds.
unsafe fn base(p: *mut c_void) -> *mut u8 {
    (p as *mut u8).sub(HEADER)
}

unsafe extern "C" fn x_malloc(n: c_int) -> *mut c_void {
    if n <= 0 {
        return std::ptr::null_mut();
    }
    let n = n as usize;
    let b = alloc(layout(n));
    if b.is_null() {
        return std::ptr::null_mut();
    }
    (b as *mut usize).write(n);
    b.add(HEADER) as *mut c_void
}

unsafe extern "C" fn x_free(p: *mut c_void) {
    if p.is_null() {
        return;
    }
    let b = base(p);
    dealloc(b, layout((b as *const usize).read()));
}

unsafe extern "C" fn x_realloc(p: *mut c_void, n: c_int) -> *mut c_void {
    if p.is_null() {
        return x_malloc(n);
    }
    if n <= 0 {
        x_free(p);
        return std::ptr::null_mut();
    }
    let b = base(p);
    let old = (b as *const usize).read();
    let grown = realloc(b, layout(old), n as usize + HEADER);
    if grown.is_null() {
        // SQLite keeps the old block, as with realloc(3).
        return std::ptr::null_mut();
    }
    (grown as *mut usize).write(n as usize);
    grown.add(HEADER) as *mut c_void
}

unsafe extern "C" fn x_size(p: *mut c_void) -> c_int {
    if p.is_null() {
        return 0;
    }
    (base(p) as *const usize).read() as c_int
}

unsafe extern "C" fn x_roundup(n: c_int) -> c_int {
    (n + 7) & !7
}

unsafe extern "C" fn x_init(_: *mut c_void) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_shutdown(_: *mut c_void) {}

/// Installs the allocator; SQLite copies the methods. Must run before SQLite is initialized
/// (before the first connection); later, SQLite refuses it and keeps its own, which is safe.
pub(crate) fn install() {
    let methods = ffi::sqlite3_mem_methods {
        xMalloc: Some(x_malloc),
        xFree: Some(x_free),
        xRealloc: Some(x_realloc),
        xSize: Some(x_size),
        xRoundup: Some(x_roundup),
        xInit: Some(x_init),
        xShutdown: Some(x_shutdown),
        pAppData: std::ptr::null_mut(),
    };
    // SAFETY: called once, before any connection exists (see `init_sqlite`); the methods are
    // sound for any pointer SQLite got from them.
    let rc = unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_MALLOC, &methods as *const ffi::sqlite3_mem_methods) };
    INSTALLED.store(rc == ffi::SQLITE_OK, Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_keep_their_size_through_realloc() {
        unsafe {
            let p = x_malloc(10);
            assert_eq!(x_size(p), 10);
            std::ptr::write_bytes(p as *mut u8, 7, 10);
            let q = x_realloc(p, 5000);
            assert_eq!(x_size(q), 5000);
            assert_eq!(std::slice::from_raw_parts(q as *const u8, 10), &[7u8; 10]);
            assert_eq!(q as usize % 8, 0, "SQLite needs 8-byte alignment");
            x_free(q);
            assert!(x_malloc(0).is_null());
            x_free(std::ptr::null_mut());
        }
    }
}
