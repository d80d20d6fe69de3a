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

  ! ---- the primitives (ka_prims.h)
  integer(c_int), parameter, public :: KA_DTYPE_I32 = 1, KA_DTYPE_U32 = 2, KA_DTYPE_I64 = 3, KA_DTYPE_U64 = 4, &
                                       KA_DTYPE_F32 = 5, KA_DTYPE_F64 = 6
  integer(c_int), parameter, public :: KA_PRIM_REDUCE = 1, KA_PRIM_SCAN = 2, KA_PRIM_SORT = 3, KA_PRIM_SELECT = 4, &
                                       KA_PRIM_HISTOGRAM = 5, KA_PRIM_SEARCHSORTED = 6, KA_PRIM_SEGMENTED_REDUCE = 7
  integer(c_int), parameter, public :: KA_REDUCE_SUM = 0, KA_REDUCE_MIN = 1, KA_REDUCE_MAX = 2, KA_REDUCE_USER = 3
  integer(c_int32_t), parameter, public :: KA_PRIM_SORT_VALUES = 1, KA_PRIM_SORT_VALUES8 = 2, KA_PRIM_ARGSORT = 4, &
                                           KA_PRIM_ARGSORT64 = 8
  ! A plan (ka_prims_plan *): made by ka_prims_plan_create, freed by ka_prims_plan_release.
  type, bind(c), public :: ka_prims_plan
    type(c_ptr) :: ptr = c_null_ptr
  end type
  ! struct ka_prims_desc, as C lays it out (test_fortran_layout checks it): ka_prims_plan_create_desc
  ! fills one from Fortran strings.
  type, bind(c), public :: ka_prims_desc
    integer(c_int) :: kind = 0, dtype = 0
    integer(c_size_t) :: max_n = 0
    integer(c_int32_t) :: flags = 0
    type(c_ptr) :: source = c_null_ptr, op = c_null_ptr, identity = c_null_ptr, map = c_null_ptr, &
                   predicate = c_null_ptr
    integer(c_int32_t) :: bins = 0
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
  public :: ka_event_wait, ka_wait_all, ka_wait_any, ka_event_release
  public :: ka_graph_begin, ka_graph_end, ka_graph_launch, ka_graph_last_node, ka_graph_set_arg, ka_graph_release
  public :: ka_set_allocator, ka_set_wait_spin
  public :: ka_arg_buf, ka_arg_f64, ka_arg_f32, ka_arg_i32, ka_arg_i64, ka_arg_local_bytes
  public :: ka_range_1d, ka_range_2d, ka_range_3d
  public :: ka_prims_plan_create, ka_prims_plan_create_desc, ka_prims_plan_release
  public :: ka_reduce, ka_scan, ka_sort, ka_sort_pairs, ka_argsort, ka_select, ka_histogram, ka_searchsorted, &
            ka_segmented_reduce

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
    integer(c_int) function c_ka_wait_any(evs, n, timeout_ns, index) bind(c, name='ka_wait_any')
      import; type(ka_event), intent(in) :: evs(*)
      integer(c_int32_t), value :: n
      integer(c_int64_t), value :: timeout_ns
      integer(c_int32_t), intent(out) :: index
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

    ! ---- the primitives: offsets in bytes, as in C; a buffer not given is ka_buffer() (id 0)
    integer(c_int) function ka_prims_plan_create(dev, kind, dtype, max_n, flags, plan) &
        bind(c, name='ka_prims_plan_create')
      import; type(ka_device), value :: dev
      integer(c_int), value :: kind, dtype
      integer(c_size_t), value :: max_n
      integer(c_int32_t), value :: flags
      type(ka_prims_plan), intent(out) :: plan
    end function
    integer(c_int) function c_ka_prims_plan_create_desc(dev, desc, plan) bind(c, name='ka_prims_plan_create_desc')
      import; type(ka_device), value :: dev
      type(ka_prims_desc), intent(in) :: desc
      type(ka_prims_plan), intent(out) :: plan
    end function
    integer(c_int) function c_ka_prims_plan_release(plan) bind(c, name='ka_prims_plan_release')
      import; type(ka_prims_plan), value :: plan
    end function
    integer(c_int) function ka_reduce(q, plan, out, out_offset, in, in_offset, n, op, ev) bind(c, name='ka_reduce')
      import; type(ka_queue), value :: q
      type(ka_prims_plan), value :: plan
      type(ka_buffer), value :: out, in
      integer(c_size_t), value :: out_offset, in_offset, n
      integer(c_int), value :: op
      type(ka_event), intent(out), optional :: ev
    end function
    ! exclusive: 0 inclusive, 1 exclusive
    integer(c_int) function ka_scan(q, plan, out, out_offset, in, in_offset, n, exclusive, ev) bind(c, name='ka_scan')
      import; type(ka_queue), value :: q
      type(ka_prims_plan), value :: plan
      type(ka_buffer), value :: out, in
      integer(c_size_t), value :: out_offset, in_offset, n
      integer(c_int), value :: exclusive
      type(ka_event), intent(out), optional :: ev
    end function
    integer(c_int) function ka_sort(q, plan, keys, keys_offset, values, values_offset, n, ev) bind(c, name='ka_sort')
      import; type(ka_queue), value :: q
      type(ka_prims_plan), value :: plan
      type(ka_buffer), value :: keys, values
      integer(c_size_t), value :: keys_offset, values_offset, n
      type(ka_event), intent(out), optional :: ev
    end function
    integer(c_int) function ka_sort_pairs(q, plan, keys, keys_offset, values, values_offset, n, ev) &
        bind(c, name='ka_sort_pairs')
      import; type(ka_queue), value :: q
      type(ka_prims_plan), value :: plan
      type(ka_buffer), value :: keys, values
      integer(c_size_t), value :: keys_offset, values_offset, n
      type(ka_event), intent(out), optional :: ev
    end function
    ! perm: 0-based indices, as in C
    integer(c_int) function ka_argsort(q, plan, perm, perm_offset, keys, keys_offset, n, ev) bind(c, name='ka_argsort')
      import; type(ka_queue), value :: q
      type(ka_prims_plan), value :: plan
      type(ka_buffer), value :: perm, keys
      integer(c_size_t), value :: perm_offset, keys_offset, n
      type(ka_event), intent(out), optional :: ev
    end function
    integer(c_int) function ka_select(q, plan, out, out_offset, count, count_offset, in, in_offset, flags, &
                                      flags_offset, n, ev) bind(c, name='ka_select')
      import; type(ka_queue), value :: q
      type(ka_prims_plan), value :: plan
      type(ka_buffer), value :: out, count, in, flags
      integer(c_size_t), value :: out_offset, count_offset, in_offset, flags_offset, n
      type(ka_event), intent(out), optional :: ev
    end function
    integer(c_int) function ka_histogram(q, plan, counts, counts_offset, in, in_offset, n, lower, upper, ev) &
        bind(c, name='ka_histogram')
      import; type(ka_queue), value :: q
      type(ka_prims_plan), value :: plan
      type(ka_buffer), value :: counts, in
      integer(c_size_t), value :: counts_offset, in_offset, n
      real(c_double), value :: lower, upper
      type(ka_event), intent(out), optional :: ev
    end function
    ! out: 0-based indices, as in C; upper: 0 lower bound, 1 upper bound
    integer(c_int) function ka_searchsorted(q, plan, out, out_offset, sorted, sorted_offset, n_sorted, needles, &
                                            needles_offset, n_needles, upper, ev) bind(c, name='ka_searchsorted')
      import; type(ka_queue), value :: q
      type(ka_prims_plan), value :: plan
      type(ka_buffer), value :: out, sorted, needles
      integer(c_size_t), value :: out_offset, sorted_offset, n_sorted, needles_offset, n_needles
      integer(c_int), value :: upper
      type(ka_event), intent(out), optional :: ev
    end function
    ! offsets: n_segments + 1 0-based element indices (u64)
    integer(c_int) function ka_segmented_reduce(q, plan, out, out_offset, in, in_offset, offsets, offsets_offset, &
                                                n_segments, op, ev) bind(c, name='ka_segmented_reduce')
      import; type(ka_queue), value :: q
      type(ka_prims_plan), value :: plan
      type(ka_buffer), value :: out, in, offsets
      integer(c_size_t), value :: out_offset, in_offset, offsets_offset, n_segments
      integer(c_int), value :: op
      type(ka_event), intent(out), optional :: ev
    end function

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

  ! Releases the plan and empties plan (ptr NULL), so a second release is a no-op, as for NULL in C.
  integer(c_int) function ka_prims_plan_release(plan) result(st)
    type(ka_prims_plan), intent(inout) :: plan
    st = c_ka_prims_plan_release(plan)
    plan%ptr = c_null_ptr
  end function

  ! A plan with a user operator, predicate or bins (ka_prims_desc): the strings
  ! are expressions in the kernel dialect (trailing blanks dropped), each absent
  ! one NULL. Allocates the strings' NUL-terminated copies for the call only.
  integer(c_int) function ka_prims_plan_create_desc(dev, kind, dtype, max_n, plan, flags, source, op, identity, &
                                                    map, predicate, bins) result(st)
    type(ka_device), intent(in) :: dev
    integer(c_int), intent(in) :: kind, dtype
    integer(c_size_t), intent(in) :: max_n
    type(ka_prims_plan), intent(out) :: plan
    integer(c_int32_t), intent(in), optional :: flags, bins
    character(len=*), intent(in), optional :: source, op, identity, map, predicate
    character(kind=c_char, len=:), allocatable, target :: c_source, c_op, c_identity, c_map, c_predicate
    type(ka_prims_desc) :: d
    d%kind = kind
    d%dtype = dtype
    d%max_n = max_n
    if (present(flags)) d%flags = flags
    if (present(bins)) d%bins = bins
    call c_string(source, c_source, d%source)
    call c_string(op, c_op, d%op)
    call c_string(identity, c_identity, d%identity)
    call c_string(map, c_map, d%map)
    call c_string(predicate, c_predicate, d%predicate)
    st = c_ka_prims_plan_create_desc(dev, d, plan)
  end function

  ! s as a NUL-terminated copy in buf (trailing blanks dropped) and its address
  ! in p; s absent: p left as it is (NULL). buf is the caller's, alive while C reads p.
  subroutine c_string(s, buf, p)
    character(len=*), intent(in), optional :: s
    character(kind=c_char, len=:), allocatable, target, intent(inout) :: buf
    type(c_ptr), intent(inout) :: p
    if (.not. present(s)) return
    buf = trim(s) // c_null_char
    p = c_loc(buf)
  end subroutine

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
  ! index: the 0-based position in evs of a completed event, as in C.
  integer(c_int) function ka_wait_any(evs, timeout_ns, index) result(st)
    type(ka_event), intent(in), contiguous :: evs(:)
    integer(c_int64_t), intent(in) :: timeout_ns
    integer(c_int32_t), intent(out) :: index
    st = c_ka_wait_any(evs, int(size(evs), c_int32_t), timeout_ns, index)
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
