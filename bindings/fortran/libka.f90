! libka: Fortran 2008 module over the C API (include/ka.h), through ISO_C_BINDING.
!
! Handles are the C structs (one 64-bit id), passed by value; every call returns
! a ka_status (KA_OK = 0) as integer(c_int). Launch arguments are a caller-owned
! array of type(ka_arg) filled by the elemental ka_arg_* helpers, so a launch
! allocates nothing. Strings handed to C get their trailing NUL here (that copy
! is made at build, lookup and open time only, never per launch).
! Column-major arrays: dimension 0 of a range runs down a column (docs/FORTRAN.md).
module libka
  use, intrinsic :: iso_c_binding
  implicit none
  private
  ! The ISO_C_BINDING names a caller of this module needs, re-exported.
  public :: c_int, c_int32_t, c_int64_t, c_size_t, c_float, c_double, c_ptr, c_null_ptr, c_f_pointer, &
            c_loc, c_associated, c_funptr, c_funloc, c_null_funptr

  ! ---- status codes: the values of KA_STATUS_MAP in ka.h (test_fortran_layout checks each against ka_status_name)
  integer(c_int), parameter, public :: KA_OK = 0
  integer(c_int), parameter, public :: KA_ERR_INVALID_ARGUMENT = -1
  integer(c_int), parameter, public :: KA_ERR_INVALID_HANDLE = -2
  integer(c_int), parameter, public :: KA_ERR_OUT_OF_MEMORY = -3
  integer(c_int), parameter, public :: KA_ERR_DEVICE_OUT_OF_MEMORY = -4
  integer(c_int), parameter, public :: KA_ERR_NO_DEVICE = -5
  integer(c_int), parameter, public :: KA_ERR_BUILD_FAILED = -6
  integer(c_int), parameter, public :: KA_ERR_KERNEL_NOT_FOUND = -7
  integer(c_int), parameter, public :: KA_ERR_INVALID_RANGE = -8
  integer(c_int), parameter, public :: KA_ERR_INVALID_WORKGROUP = -9
  integer(c_int), parameter, public :: KA_ERR_ARG_COUNT = -10
  integer(c_int), parameter, public :: KA_ERR_ARG_TYPE = -11
  integer(c_int), parameter, public :: KA_ERR_UNSUPPORTED = -12
  integer(c_int), parameter, public :: KA_ERR_EVENT_POOL_EXHAUSTED = -13
  integer(c_int), parameter, public :: KA_ERR_TIMEOUT = -14
  integer(c_int), parameter, public :: KA_ERR_DEVICE = -15
  integer(c_int), parameter, public :: KA_ERR_IN_USE = -16
  integer(c_int), parameter, public :: KA_ERR_BACKEND_UNAVAILABLE = -17
  integer(c_int), parameter, public :: KA_ERR_KERNEL_FAILED = -18
  integer(c_int), parameter, public :: KA_ERR_IO = -19
  integer(c_int), parameter, public :: KA_ERR_OUT_OF_BOUNDS = -20

  integer(c_int), parameter, public :: KA_BACKEND_NULL = 0, KA_BACKEND_OPENCL = 1, KA_BACKEND_CUDA = 2, &
                                       KA_BACKEND_HOST = 3
  integer(c_int32_t), parameter, public :: KA_ARG_BUFFER = 1, KA_ARG_SCALAR = 2, KA_ARG_LOCAL = 3, &
                                           KA_ARG_BYTES = 4, KA_ARG_INT = 5, KA_ARG_FLOAT = 6
  integer(c_int32_t), parameter, public :: KA_LAUNCH_ASYNC = 1, KA_LAUNCH_SPREAD = 2
  integer(c_int32_t), parameter, public :: KA_MAP_READ = 1, KA_MAP_WRITE = 2
  integer(c_int), parameter, public :: KA_MAX_ARGS = 64, KA_HOST_ALIGN = 4096
  integer(c_int64_t), parameter, public :: KA_WAIT_FOREVER = huge(0_c_int64_t)
  integer(c_int64_t), parameter, public :: KA_SPIN_DEFAULT = -1, KA_INLINE_OFF = -1

  ! ---- handles: struct { uint64_t id; } (ids fit in 63 bits; 0 is the null handle)
  type, bind(c), public :: ka_device
    integer(c_int64_t) :: id = 0
  end type
  type, bind(c), public :: ka_queue
    integer(c_int64_t) :: id = 0
  end type
  type, bind(c), public :: ka_buffer
    integer(c_int64_t) :: id = 0
  end type
  type, bind(c), public :: ka_program
    integer(c_int64_t) :: id = 0
  end type
  type, bind(c), public :: ka_kernel
    integer(c_int64_t) :: id = 0
  end type
  type, bind(c), public :: ka_event
    integer(c_int64_t) :: id = 0
  end type
  type, bind(c), public :: ka_graph
    integer(c_int64_t) :: id = 0
  end type
  type, bind(c), public :: ka_graph_node
    integer(c_int32_t) :: index = 0
  end type

  ! struct ka_arg { uint32_t kind, size; union { ... 8 bytes } u; }: the union's
  ! bytes in u (a value sits at its first bytes, as in C, whatever the byte order).
  type, bind(c), public :: ka_arg
    integer(c_int32_t) :: kind = 0
    integer(c_int32_t) :: size = 0
    integer(c_int64_t) :: u = 0
  end type

  ! struct ka_range: dims 1-3; size(1) is dimension 0 (the fastest-varying index
  ! of a Fortran array: down a column); workgroup all 0 = chosen by libka.
  type, bind(c), public :: ka_range
    integer(c_int32_t) :: dims = 1
    integer(c_int64_t) :: size(3) = 1
    integer(c_int32_t) :: workgroup(3) = 0
    integer(c_int32_t) :: flags = 0
  end type

  type, bind(c), public :: ka_queue_config
    integer(c_int32_t) :: event_capacity = 0
    integer(c_int64_t) :: spin_ns = 0
    integer(c_int64_t) :: inline_max_items = 0
    integer(c_int32_t) :: profiling = 0
  end type

  ! struct ka_allocator: alloc(size_t size, void *user) -> void*, free(void *p, size_t size, void *user).
  type, bind(c), public :: ka_allocator
    type(c_funptr) :: alloc = c_null_funptr
    type(c_funptr) :: free = c_null_funptr
    type(c_ptr) :: user = c_null_ptr
  end type

  public :: ka_last_error, ka_strerror, ka_status_name, ka_version
  public :: ka_device_open, ka_device_close, ka_device_count
  public :: ka_queue_create, ka_queue_release, ka_queue_finish, ka_queue_flush
  public :: ka_buffer_create, ka_buffer_create_zeroed, ka_buffer_release, ka_buffer_size
  public :: ka_buffer_write, ka_buffer_read, ka_buffer_copy, ka_buffer_wrap, ka_buffer_map, ka_buffer_unmap
  public :: ka_program_build, ka_program_build_file, ka_program_release, ka_kernel_get
  public :: ka_launch, ka_launch_n
  public :: ka_event_wait, ka_wait_all, ka_event_release
  public :: ka_graph_begin, ka_graph_end, ka_graph_launch, ka_graph_last_node, ka_graph_set_arg, ka_graph_release
  public :: ka_set_allocator, ka_set_wait_spin
  public :: ka_arg_buf, ka_arg_f64, ka_arg_f32, ka_arg_i32, ka_arg_i64, ka_arg_local_bytes
  public :: ka_range_1d, ka_range_2d, ka_range_3d

  ! ---- direct bindings: the C calls as they are (no wrapper on these)
  interface
    integer(c_int) function ka_device_close(dev) bind(c, name='ka_device_close')
      import; type(ka_device), value :: dev
    end function
    integer(c_int) function ka_device_count(count) bind(c, name='ka_device_count')
      import; integer(c_int32_t), intent(out) :: count
    end function
    ! cfg absent: the defaults (a NULL config)
    integer(c_int) function ka_queue_create(dev, cfg, q) bind(c, name='ka_queue_create')
      import; type(ka_device), value :: dev
      type(ka_queue_config), intent(in), optional :: cfg
      type(ka_queue), intent(out) :: q
    end function
    integer(c_int) function ka_queue_release(q) bind(c, name='ka_queue_release')
      import; type(ka_queue), value :: q
    end function
    integer(c_int) function ka_queue_finish(q) bind(c, name='ka_queue_finish')
      import; type(ka_queue), value :: q
    end function
    integer(c_int) function ka_queue_flush(q) bind(c, name='ka_queue_flush')
      import; type(ka_queue), value :: q
    end function
    integer(c_int) function ka_buffer_create(dev, bytes, b) bind(c, name='ka_buffer_create')
      import; type(ka_device), value :: dev
      integer(c_size_t), value :: bytes
      type(ka_buffer), intent(out) :: b
    end function
    integer(c_int) function ka_buffer_create_zeroed(dev, bytes, b) bind(c, name='ka_buffer_create_zeroed')
      import; type(ka_device), value :: dev
      integer(c_size_t), value :: bytes
      type(ka_buffer), intent(out) :: b
    end function
    integer(c_int) function ka_buffer_release(b) bind(c, name='ka_buffer_release')
      import; type(ka_buffer), value :: b
    end function
    integer(c_int) function ka_buffer_size(b, bytes) bind(c, name='ka_buffer_size')
      import; type(ka_buffer), value :: b
      integer(c_size_t), intent(out) :: bytes
    end function
    ! src/dst: any contiguous array (assumed type: its address is passed); offsets and sizes in bytes
    integer(c_int) function ka_buffer_write(q, dst, dst_offset, src, bytes) bind(c, name='ka_buffer_write')
      import; type(ka_queue), value :: q
      type(ka_buffer), value :: dst
      integer(c_size_t), value :: dst_offset, bytes
      type(*), intent(in) :: src(*)
    end function
    integer(c_int) function ka_buffer_read(q, dst, src, src_offset, bytes) bind(c, name='ka_buffer_read')
      import; type(ka_queue), value :: q
      type(*), intent(inout) :: dst(*)
      type(ka_buffer), value :: src
      integer(c_size_t), value :: src_offset, bytes
    end function
    integer(c_int) function ka_buffer_copy(q, dst, dst_offset, src, src_offset, bytes, ev) &
        bind(c, name='ka_buffer_copy')
      import; type(ka_queue), value :: q
      type(ka_buffer), value :: dst, src
      integer(c_size_t), value :: dst_offset, src_offset, bytes
      type(ka_event), intent(out), optional :: ev
    end function
    ! The array stays the buffer's storage until release (give it the target attribute;
    ! KA_HOST_ALIGN-aligned memory avoids a copy on some devices: docs/API.md).
    integer(c_int) function ka_buffer_wrap(dev, host, bytes, b) bind(c, name='ka_buffer_wrap')
      import; type(ka_device), value :: dev
      type(*) :: host(*)
      integer(c_size_t), value :: bytes
      type(ka_buffer), intent(out) :: b
    end function
    ! ptr: c_f_pointer(ptr, array, shape) views the mapped bytes
    integer(c_int) function ka_buffer_map(q, b, offset, bytes, flags, ptr) bind(c, name='ka_buffer_map')
      import; type(ka_queue), value :: q
      type(ka_buffer), value :: b
      integer(c_size_t), value :: offset, bytes
      integer(c_int32_t), value :: flags
      type(c_ptr), intent(out) :: ptr
    end function
    integer(c_int) function ka_buffer_unmap(q, b, ptr) bind(c, name='ka_buffer_unmap')
      import; type(ka_queue), value :: q
      type(ka_buffer), value :: b
      type(c_ptr), value :: ptr
    end function
    integer(c_int) function ka_program_release(p) bind(c, name='ka_program_release')
      import; type(ka_program), value :: p
    end function
    ! The C call itself: nargs arguments of args; ev absent = no event. Allocates nothing.
    integer(c_int) function ka_launch_n(q, k, range, args, nargs, ev) bind(c, name='ka_launch')
      import; type(ka_queue), value :: q
      type(ka_kernel), value :: k
      type(ka_range), intent(in) :: range
      type(ka_arg), intent(in) :: args(*)
      integer(c_int32_t), value :: nargs
      type(ka_event), intent(out), optional :: ev
    end function
    integer(c_int) function ka_event_wait(ev, timeout_ns) bind(c, name='ka_event_wait')
      import; type(ka_event), value :: ev
      integer(c_int64_t), value :: timeout_ns
    end function
    integer(c_int) function c_ka_wait_all(evs, n, timeout_ns) bind(c, name='ka_wait_all')
      import; type(ka_event), intent(in) :: evs(*)
      integer(c_int32_t), value :: n
      integer(c_int64_t), value :: timeout_ns
    end function
    integer(c_int) function ka_event_release(ev) bind(c, name='ka_event_release')
      import; type(ka_event), value :: ev
    end function
    integer(c_int) function ka_graph_begin(q) bind(c, name='ka_graph_begin')
      import; type(ka_queue), value :: q
    end function
    integer(c_int) function ka_graph_end(q, g) bind(c, name='ka_graph_end')
      import; type(ka_queue), value :: q
      type(ka_graph), intent(out) :: g
    end function
    integer(c_int) function ka_graph_launch(q, g, ev) bind(c, name='ka_graph_launch')
      import; type(ka_queue), value :: q
      type(ka_graph), value :: g
      type(ka_event), intent(out), optional :: ev
    end function
    integer(c_int) function ka_graph_last_node(q, node) bind(c, name='ka_graph_last_node')
      import; type(ka_queue), value :: q
      type(ka_graph_node), intent(out) :: node
    end function
    ! index counts from 0, as in C
    integer(c_int) function ka_graph_set_arg(g, node, index, arg) bind(c, name='ka_graph_set_arg')
      import; type(ka_graph), value :: g
      type(ka_graph_node), value :: node
      integer(c_int32_t), value :: index
      type(ka_arg), value :: arg
    end function
    integer(c_int) function ka_graph_release(g) bind(c, name='ka_graph_release')
      import; type(ka_graph), value :: g
    end function
    ! a absent: malloc/free again. Only while no libka object is alive (ka.h).
    subroutine ka_set_allocator(a) bind(c, name='ka_set_allocator')
      import; type(ka_allocator), intent(in), optional :: a
    end subroutine
    subroutine ka_set_wait_spin(spin_ns) bind(c, name='ka_set_wait_spin')
      import; integer(c_int64_t), value :: spin_ns
    end subroutine

    ! behind the wrappers below
    type(c_ptr) function c_ka_last_error() bind(c, name='ka_last_error')
      import
    end function
    type(c_ptr) function c_ka_strerror(s) bind(c, name='ka_strerror')
      import; integer(c_int), value :: s
    end function
    type(c_ptr) function c_ka_status_name(s) bind(c, name='ka_status_name')
      import; integer(c_int), value :: s
    end function
    type(c_ptr) function c_ka_version() bind(c, name='ka_version')
      import
    end function
    integer(c_int) function c_ka_device_open(selector, dev) bind(c, name='ka_device_open')
      import; character(kind=c_char), intent(in) :: selector(*)
      type(ka_device), intent(out) :: dev
    end function
    integer(c_int) function c_ka_program_build(dev, source, opts, p) bind(c, name='ka_program_build')
      import; type(ka_device), value :: dev
      character(kind=c_char), intent(in) :: source(*)
      type(c_ptr), value :: opts
      type(ka_program), intent(out) :: p
    end function
    integer(c_int) function c_ka_program_build_file(dev, path, opts, p) bind(c, name='ka_program_build_file')
      import; type(ka_device), value :: dev
      character(kind=c_char), intent(in) :: path(*)
      type(c_ptr), value :: opts
      type(ka_program), intent(out) :: p
    end function
    integer(c_int) function c_ka_kernel_get(p, name, cfg, k) bind(c, name='ka_kernel_get')
      import; type(ka_program), value :: p
      character(kind=c_char), intent(in) :: name(*)
      type(c_ptr), value :: cfg
      type(ka_kernel), intent(out) :: k
    end function
    integer(c_size_t) function c_strlen(s) bind(c, name='strlen')
      import; type(c_ptr), value :: s
    end function
  end interface

  interface ka_range_1d
    module procedure range_1d_i4, range_1d_i8
  end interface
  interface ka_range_2d
    module procedure range_2d_i4, range_2d_i8
  end interface
  interface ka_range_3d
    module procedure range_3d_i4, range_3d_i8
  end interface

contains

  ! A C string (static or libka-owned) as a Fortran string.
  function from_c(p) result(s)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: s
    character(kind=c_char), pointer :: chars(:)
    integer(c_size_t) :: n, i
    if (.not. c_associated(p)) then
      s = ''
      return
    end if
    n = c_strlen(p)
    call c_f_pointer(p, chars, [n])
    allocate(character(len=n) :: s)
    do i = 1, n
      s(i:i) = chars(i)
    end do
  end function

  ! The detail of this thread's last failure ("" if none).
  function ka_last_error() result(s)
    character(len=:), allocatable :: s
    s = from_c(c_ka_last_error())
  end function
  function ka_strerror(st) result(s)
    integer(c_int), intent(in) :: st
    character(len=:), allocatable :: s
    s = from_c(c_ka_strerror(st))
  end function
  function ka_status_name(st) result(s)
    integer(c_int), intent(in) :: st
    character(len=:), allocatable :: s
    s = from_c(c_ka_status_name(st))
  end function
  function ka_version() result(s)
    character(len=:), allocatable :: s
    s = from_c(c_ka_version())
  end function

  ! selector: as in C ("" reads $KA_DEVICE, else PoCL, else device 0); trailing blanks dropped.
  integer(c_int) function ka_device_open(selector, dev) result(st)
    character(len=*), intent(in) :: selector
    type(ka_device), intent(out) :: dev
    st = c_ka_device_open(trim(selector) // c_null_char, dev)
  end function

  ! Builds kernel source held in a Fortran string (lines joined with new_line('a')).
  integer(c_int) function ka_program_build(dev, source, p) result(st)
    type(ka_device), intent(in) :: dev
    character(len=*), intent(in) :: source
    type(ka_program), intent(out) :: p
    st = c_ka_program_build(dev, source // c_null_char, c_null_ptr, p)
  end function
  integer(c_int) function ka_program_build_file(dev, path, p) result(st)
    type(ka_device), intent(in) :: dev
    character(len=*), intent(in) :: path
    type(ka_program), intent(out) :: p
    st = c_ka_program_build_file(dev, trim(path) // c_null_char, c_null_ptr, p)
  end function
  ! A known kernel's lookup allocates nothing in C: the NUL-terminated copy of a
  ! name shorter than 256 characters is made on the stack (a longer one on the heap).
  integer(c_int) function ka_kernel_get(p, name, k) result(st)
    type(ka_program), intent(in) :: p
    character(len=*), intent(in) :: name
    type(ka_kernel), intent(out) :: k
    character(kind=c_char, len=256) :: buf
    integer :: n
    n = len_trim(name)
    if (n < len(buf)) then
      buf(1:n) = name(1:n)
      buf(n + 1:n + 1) = c_null_char
      st = c_ka_kernel_get(p, buf, c_null_ptr, k)
    else
      st = c_ka_kernel_get(p, trim(name) // c_null_char, c_null_ptr, k)
    end if
  end function

  ! ka_launch over all of args (a contiguous array: no copy, nothing allocated).
  integer(c_int) function ka_launch(q, k, range, args, ev) result(st)
    type(ka_queue), intent(in) :: q
    type(ka_kernel), intent(in) :: k
    type(ka_range), intent(in) :: range
    type(ka_arg), intent(in), contiguous :: args(:)
    type(ka_event), intent(out), optional :: ev
    st = ka_launch_n(q, k, range, args, int(size(args), c_int32_t), ev)
  end function

  integer(c_int) function ka_wait_all(evs, timeout_ns) result(st)
    type(ka_event), intent(in), contiguous :: evs(:)
    integer(c_int64_t), intent(in) :: timeout_ns
    st = c_ka_wait_all(evs, int(size(evs), c_int32_t), timeout_ns)
  end function

  ! ---- launch arguments
  elemental function ka_arg_buf(b) result(a)
    type(ka_buffer), intent(in) :: b
    type(ka_arg) :: a
    a = ka_arg(KA_ARG_BUFFER, 8, b%id)
  end function
  elemental function ka_arg_f64(x) result(a)
    real(c_double), intent(in) :: x
    type(ka_arg) :: a
    a = ka_arg(KA_ARG_FLOAT, 8, transfer(x, 0_c_int64_t))
  end function
  elemental function ka_arg_i64(n) result(a)
    integer(c_int64_t), intent(in) :: n
    type(ka_arg) :: a
    a = ka_arg(KA_ARG_INT, 8, n)
  end function
  ! 4-byte values: in the union's first 4 bytes, the others zero (as ka.h's helpers).
  elemental function ka_arg_f32(x) result(a)
    real(c_float), intent(in) :: x
    type(ka_arg) :: a
    a = ka_arg(KA_ARG_FLOAT, 4, transfer([transfer(x, 0_c_int32_t), 0_c_int32_t], 0_c_int64_t))
  end function
  elemental function ka_arg_i32(n) result(a)
    integer(c_int32_t), intent(in) :: n
    type(ka_arg) :: a
    a = ka_arg(KA_ARG_INT, 4, transfer([n, 0_c_int32_t], 0_c_int64_t))
  end function
  ! Dynamic local memory of `bytes` bytes.
  elemental function ka_arg_local_bytes(bytes) result(a)
    integer(c_int64_t), intent(in) :: bytes
    type(ka_arg) :: a
    a = ka_arg(KA_ARG_LOCAL, int(min(bytes, 4294967295_c_int64_t), c_int32_t), 0)
  end function

  ! ---- ranges: n0 is dimension 0 (down a column of a Fortran array)
  pure function range_1d_i8(n0) result(r)
    integer(c_int64_t), intent(in) :: n0
    type(ka_range) :: r
    r%dims = 1
    r%size = [n0, 1_c_int64_t, 1_c_int64_t]
  end function
  pure function range_1d_i4(n0) result(r)
    integer(c_int32_t), intent(in) :: n0
    type(ka_range) :: r
    r = range_1d_i8(int(n0, c_int64_t))
  end function
  pure function range_2d_i8(n0, n1) result(r)
    integer(c_int64_t), intent(in) :: n0, n1
    type(ka_range) :: r
    r%dims = 2
    r%size = [n0, n1, 1_c_int64_t]
  end function
  pure function range_2d_i4(n0, n1) result(r)
    integer(c_int32_t), intent(in) :: n0, n1
    type(ka_range) :: r
    r = range_2d_i8(int(n0, c_int64_t), int(n1, c_int64_t))
  end function
  pure function range_3d_i8(n0, n1, n2) result(r)
    integer(c_int64_t), intent(in) :: n0, n1, n2
    type(ka_range) :: r
    r%dims = 3
    r%size = [n0, n1, n2]
  end function
  pure function range_3d_i4(n0, n1, n2) result(r)
    integer(c_int32_t), intent(in) :: n0, n1, n2
    type(ka_range) :: r
    r = range_3d_i8(int(n0, c_int64_t), int(n1, c_int64_t), int(n2, c_int64_t))
  end function
end module libka
