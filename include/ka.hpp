/* libka for C++17: RAII owners and exceptions over the C API of ka.h,
 * header-only. A launch builds its ka_arg array on the stack and allocates
 * nothing; see docs/CPP.md. */
#ifndef KA_HPP
#define KA_HPP

#include <ka.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace ka {

/* A failed libka call: status() is its ka_status, what() the detail
 * (ka_last_error()), always starting with the C call's name. */
class error : public std::runtime_error {
public:
    error(ka_status s, const std::string &msg) : std::runtime_error(msg), status_(s) {}
    ka_status status() const noexcept { return status_; }

private:
    ka_status status_;
};

namespace detail {
/* Out of line and cold: the launch path keeps only a compare and a branch. */
[[noreturn]] __attribute__((noinline, cold)) inline void raise(ka_status s, const char *call) {
    std::string d = ka_last_error();
    std::string c = call;
    if (d.compare(0, c.size(), c) != 0) d = d.empty() ? c + ": " + ka_strerror(s) : c + ": " + d;
    throw error(s, d);
}
inline void check(ka_status s, const char *call) {
    if (s != KA_OK) raise(s, call);
}

/* A count of elements of `size` bytes that has no byte count: refused before
 * the C call (ka_last_error() is left as it was). */
[[noreturn]] __attribute__((noinline, cold)) inline void too_many(const char *call, const char *what, size_t n,
                                                                   size_t size) {
    throw error(KA_ERR_INVALID_ARGUMENT, std::string(call) + ": " + what + " of " + std::to_string(n) +
                                             " elements of " + std::to_string(size) +
                                             " bytes is over SIZE_MAX bytes");
}
/* n elements of T in bytes, checked. */
template <class T> inline size_t bytes_of(size_t n, const char *call, const char *what) {
    if (n > SIZE_MAX / sizeof(T)) too_many(call, what, n, sizeof(T));
    return n * sizeof(T);
}

/* A move-only owner of a C handle, released (errors ignored) on destruction. */
template <class H, ka_status (*Release)(H)>
class owner {
public:
    owner() noexcept : h_{0} {}
    explicit owner(H h) noexcept : h_(h) {}
    owner(const owner &) = delete;
    owner &operator=(const owner &) = delete;
    owner(owner &&o) noexcept : h_(o.h_) { o.h_.id = 0; }
    owner &operator=(owner &&o) noexcept {
        if (this != &o) {
            reset();
            h_ = o.h_;
            o.h_.id = 0;
        }
        return *this;
    }
    ~owner() { reset(); }
    /* The C handle, still owned here. */
    H get() const noexcept { return h_; }
    explicit operator bool() const noexcept { return h_.id != 0; }
    /* Gives up ownership: the caller releases the handle. */
    H release() noexcept {
        H h = h_;
        h_.id = 0;
        return h;
    }
    void reset() noexcept {
        if (h_.id) (void)Release(h_);
        h_.id = 0;
    }

protected:
    H h_;
};
} // namespace detail

class device;
class queue;
class program;
class kernel;
class event;
template <class T> class buffer;

/* An open device; closed on destruction (after everything made on it). */
class device : public detail::owner<ka_device, ka_device_close> {
public:
    /* selector as ka_device_open: NULL or "" = $KA_DEVICE, else the default. */
    explicit device(const char *selector = nullptr) {
        detail::check(ka_device_open(selector, &h_), "ka_device_open");
    }
    const ka_device_info &info() const {
        const ka_device_info *i = nullptr;
        detail::check(ka_device_get_info(h_, &i), "ka_device_get_info");
        return *i;
    }
};

/* A completed-or-pending command; released on destruction. */
class event : public detail::owner<ka_event, ka_event_release> {
public:
    event() noexcept = default;
    explicit event(ka_event e) noexcept : owner(e) {}
    void wait(int64_t timeout_ns = KA_WAIT_FOREVER) const { detail::check(ka_event_wait(h_, timeout_ns), "ka_event_wait"); }
    /* Needs a queue made with profiling = 1. */
    uint64_t elapsed_ns() const {
        uint64_t ns = 0;
        detail::check(ka_event_elapsed_ns(h_, &ns), "ka_event_elapsed_ns");
        return ns;
    }
};

/* An in-order queue; released (after finishing its work) on destruction. */
class queue : public detail::owner<ka_queue, ka_queue_release> {
public:
    explicit queue(const device &d, const ka_queue_config *cfg = nullptr) {
        detail::check(ka_queue_create(d.get(), cfg, &h_), "ka_queue_create");
    }
    void finish() const { detail::check(ka_queue_finish(h_), "ka_queue_finish"); }
    void flush() const { detail::check(ka_queue_flush(h_), "ka_queue_flush"); }
    /* Later commands of this queue wait for ev. */
    void wait(const event &ev) const { detail::check(ka_queue_wait_event(h_, ev.get()), "ka_queue_wait_event"); }
};

/* A device buffer of size() elements of T (trivially copyable). Element
 * counts and offsets whose byte count would pass SIZE_MAX throw
 * KA_ERR_INVALID_ARGUMENT before any C call. */
template <class T>
class buffer : public detail::owner<ka_buffer, ka_buffer_release> {
    static_assert(std::is_trivially_copyable<T>::value, "ka::buffer<T> needs a trivially copyable T");

public:
    buffer() noexcept = default;
    buffer(const device &d, size_t count) : n_(count) {
        detail::check(ka_buffer_create(d.get(), detail::bytes_of<T>(count, "ka_buffer_create", "a buffer"), &h_),
                      "ka_buffer_create");
    }
    /* Created holding from[0..count). */
    buffer(const device &d, const T *from, size_t count) : n_(count) {
        detail::check(ka_buffer_create_with(d.get(), detail::bytes_of<T>(count, "ka_buffer_create_with", "a buffer"),
                                            from, &h_),
                      "ka_buffer_create_with");
    }
    buffer(const device &d, const std::vector<T> &from) : buffer(d, from.data(), from.size()) {}
    buffer(buffer &&) noexcept = default;
    buffer &operator=(buffer &&) noexcept = default;
    size_t size() const noexcept { return n_; }
    size_t bytes() const noexcept { return n_ * sizeof(T); } /* fits: checked when made */
    /* Blocking copies of n elements at element offset off. */
    void write(const queue &q, const T *from, size_t n, size_t off = 0) const {
        size_t o = detail::bytes_of<T>(off, "ka_buffer_write", "an offset"),
               b = detail::bytes_of<T>(n, "ka_buffer_write", "a write");
        detail::check(ka_buffer_write(q.get(), h_, o, from, b), "ka_buffer_write");
    }
    void read(const queue &q, T *into, size_t n, size_t off = 0) const {
        size_t o = detail::bytes_of<T>(off, "ka_buffer_read", "an offset"),
               b = detail::bytes_of<T>(n, "ka_buffer_read", "a read");
        detail::check(ka_buffer_read(q.get(), into, h_, o, b), "ka_buffer_read");
    }
    void write(const queue &q, const std::vector<T> &from) const { write(q, from.data(), from.size()); }
    /* The whole buffer into a new vector (allocates it). */
    std::vector<T> read(const queue &q) const {
        std::vector<T> v(n_);
        read(q, v.data(), n_);
        return v;
    }
    /* Every element set to value, enqueued on q (in order with q's other
     * commands; q.finish() waits for it). */
    void fill(const queue &q, const T &value) const {
        static_assert(sizeof(T) <= 128 && (sizeof(T) & (sizeof(T) - 1)) == 0,
                      "ka::buffer<T>::fill needs a T of 1, 2, 4, ..., 128 bytes (ka_buffer_fill's patterns)");
        detail::check(ka_buffer_fill(q.get(), h_, 0, &value, sizeof(T), bytes(), nullptr), "ka_buffer_fill");
    }

private:
    size_t n_ = 0;
};

/* Dynamic local memory of `bytes` for a KA_LOCAL pointer parameter. */
struct local {
    size_t bytes;
    explicit constexpr local(size_t b) noexcept : bytes(b) {}
};

/* Asks launch for the command's event: k.launch(q, r, ka::with_event, args...). */
struct with_event_t {
    explicit constexpr with_event_t() = default;
};
inline constexpr with_event_t with_event{};

/* A 1-, 2- or 3-D ka_range; workgroup() and flags() chain. */
struct range {
    ka_range r;
    range(const ka_range &c) noexcept : r(c) {}
    explicit range(uint64_t x) noexcept : r{1, {x, 0, 0}, {0, 0, 0}, 0} {}
    range(uint64_t x, uint64_t y) noexcept : r{2, {x, y, 0}, {0, 0, 0}, 0} {}
    range(uint64_t x, uint64_t y, uint64_t z) noexcept : r{3, {x, y, z}, {0, 0, 0}, 0} {}
    range &workgroup(uint32_t x, uint32_t y = 0, uint32_t z = 0) noexcept {
        r.workgroup[0] = x;
        r.workgroup[1] = y;
        r.workgroup[2] = z;
        return *this;
    }
    range &flags(uint32_t f) noexcept {
        r.flags = f;
        return *this;
    }
};

namespace detail {
template <class T> inline ka_arg arg(const buffer<T> &b) noexcept { return ka_arg_buffer(b.get()); }
inline ka_arg arg(ka_buffer b) noexcept { return ka_arg_buffer(b); }
inline ka_arg arg(const ka_arg &a) noexcept { return a; }
inline ka_arg arg(local l) noexcept { return ka_arg_local(l.bytes); }
/* Scalars by their C++ type: integers as KA_ARG_INT of their size, float and
 * double as KA_ARG_FLOAT. bool has no portable kernel size: pass an integer. */
template <class T, std::enable_if_t<std::is_arithmetic<T>::value, int> = 0>
inline ka_arg arg(T v) noexcept {
    static_assert(!std::is_same<T, bool>::value, "pass an integer, not bool, to a kernel");
    static_assert(!std::is_same<T, long double>::value, "long double has no kernel type");
    if constexpr (std::is_floating_point<T>::value) {
        if constexpr (sizeof(T) == 4) return ka_arg_f32(v);
        else return ka_arg_f64(v);
    } else if constexpr (std::is_signed<T>::value) {
        if constexpr (sizeof(T) == 1) return ka_arg_i8(static_cast<int8_t>(v));
        else if constexpr (sizeof(T) == 2) return ka_arg_i16(static_cast<int16_t>(v));
        else if constexpr (sizeof(T) == 4) return ka_arg_i32(static_cast<int32_t>(v));
        else return ka_arg_i64(static_cast<int64_t>(v));
    } else {
        if constexpr (sizeof(T) == 1) return ka_arg_u8(static_cast<uint8_t>(v));
        else if constexpr (sizeof(T) == 2) return ka_arg_u16(static_cast<uint16_t>(v));
        else if constexpr (sizeof(T) == 4) return ka_arg_u32(static_cast<uint32_t>(v));
        else return ka_arg_u64(static_cast<uint64_t>(v));
    }
}
} // namespace detail

/* A kernel of a program: a plain handle (no release in the C API), valid
 * while its program lives; copyable. */
class kernel {
public:
    kernel() noexcept : h_{0} {}
    explicit kernel(ka_kernel k) noexcept : h_(k) {}
    ka_kernel get() const noexcept { return h_; }

    /* Enqueues the kernel over r with args (buffer<T>, ka_buffer, integers,
     * float/double, ka::local, ka_arg), on the stack: allocates nothing. */
    template <class... Args>
    void launch(const queue &q, const range &r, const Args &...args) const {
        static_assert(sizeof...(Args) <= KA_MAX_ARGS, "too many kernel arguments");
        const std::array<ka_arg, sizeof...(Args)> a{{detail::arg(args)...}};
        detail::check(ka_launch(q.get(), h_, &r.r, a.data(), static_cast<uint32_t>(sizeof...(Args)), nullptr),
                      "ka_launch");
    }
    /* The same, returning the command's event. */
    template <class... Args>
    event launch(const queue &q, const range &r, with_event_t, const Args &...args) const {
        static_assert(sizeof...(Args) <= KA_MAX_ARGS, "too many kernel arguments");
        const std::array<ka_arg, sizeof...(Args)> a{{detail::arg(args)...}};
        ka_event ev{0};
        detail::check(ka_launch(q.get(), h_, &r.r, a.data(), static_cast<uint32_t>(sizeof...(Args)), &ev), "ka_launch");
        return event(ev);
    }
    ka_kernel_info info() const {
        ka_kernel_info i;
        detail::check(ka_kernel_get_info(h_, &i), "ka_kernel_get_info");
        return i;
    }

private:
    ka_kernel h_;
};

/* A built program; released on destruction (its kernels with it). */
class program : public detail::owner<ka_program, ka_program_release> {
public:
    program() noexcept = default;
    /* Builds source; a compile error throws KA_ERR_BUILD_FAILED with the log in what(). */
    program(const device &d, const char *source, const ka_build_options *opts = nullptr) {
        detail::check(ka_program_build(d.get(), source, opts, &h_), "ka_program_build");
    }
    program(const device &d, const std::string &source, const ka_build_options *opts = nullptr)
        : program(d, source.c_str(), opts) {}
    static program from_file(const device &d, const char *path, const ka_build_options *opts = nullptr) {
        ka_program p{0};
        detail::check(ka_program_build_file(d.get(), path, opts, &p), "ka_program_build_file");
        return program(p);
    }
    /* Looked up (compiled the first time); a known name costs a hash, no allocation. */
    ka::kernel kernel(const char *name, const ka_kernel_config *cfg = nullptr) const {
        ka_kernel k{0};
        detail::check(ka_kernel_get(h_, name, cfg, &k), "ka_kernel_get");
        return ka::kernel(k);
    }
    const char *build_log() const {
        const char *log = "";
        detail::check(ka_program_build_log(h_, &log), "ka_program_build_log");
        return log;
    }

private:
    explicit program(ka_program p) noexcept : owner(p) {}
};

/* Waits for every event (none may be empty). */
template <class... Events>
inline void wait_all(const Events &...evs) {
    const std::array<ka_event, sizeof...(Events)> a{{evs.get()...}};
    detail::check(ka_wait_all(a.data(), static_cast<uint32_t>(sizeof...(Events)), KA_WAIT_FOREVER), "ka_wait_all");
}

} // namespace ka

#endif
