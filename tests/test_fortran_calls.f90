! The Fortran module's calls beyond the heat loop's: events and waits (all, any), copies,
! a wrapped Fortran array with map and unmap, a 3-D range over a column-major
! array, a program from a file, a recorded graph with a changed argument, and
! a failing build's log through ka_last_error.
program test_fortran_calls
  use libka
  use fortran_check
  implicit none
  character(len=*), parameter :: nl = new_line('a')
  character(len=*), parameter :: src = &
    'KA_KERNEL(add, KA_GLOBAL double *x, double v, int n) {' // nl // &
    '    size_t i = ka_global_id(0); if (i < (size_t)n) x[i] += v; }' // nl // &
    'KA_KERNEL(idx3, KA_GLOBAL int *a, int n0, int n1) {' // nl // &
    '    if (!ka_in_range()) return;' // nl // &
    '    size_t i = ka_global_id(0), j = ka_global_id(1), l = ka_global_id(2);' // nl // &
    '    a[(l * n1 + j) * n0 + i] = (int)(i + 1 + 100 * (j + 1) + 10000 * (l + 1)); }' // nl
  integer, parameter :: n = 1000, n0 = 5, n1 = 4, n2 = 3
  type(ka_device) :: dev
  type(ka_queue) :: q
  type(ka_program) :: p, pf
  type(ka_kernel) :: add, idx3, addf
  type(ka_buffer) :: a, b, w, c
  type(ka_event) :: ev(2)
  type(ka_graph) :: g
  type(ka_graph_node) :: node
  type(ka_arg) :: args(3)
  real(c_double), target :: x(n), y(n)
  real(c_double), pointer :: view(:)
  integer(c_int32_t) :: cube(n0, n1, n2)
  type(c_ptr) :: mp
  integer(c_size_t) :: bytes, got
  integer :: i, j, l, u
  integer(c_int32_t) :: idx
  integer(c_int) :: st
  character(len=:), allocatable :: detail

  bytes = 8_c_size_t * n
  call check(ka_device_open('', dev), 'open')
  call check(ka_queue_create(dev, q=q), 'queue')
  call check(ka_program_build(dev, src, p), 'build')
  call check(ka_kernel_get(p, 'add', add), 'kernel add')
  call check(ka_kernel_get(p, 'idx3', idx3), 'kernel idx3')

  ! Events: two launches, each waited; a copy's event through ka_wait_all.
  x = [(real(i, c_double), i = 1, n)]
  call check(ka_buffer_create(dev, bytes, a), 'create')
  call check(ka_buffer_size(a, got), 'size')
  call expect(got == bytes, 'ka_buffer_size')
  call check(ka_buffer_write(q, a, 0_c_size_t, x, bytes), 'write')
  args = [ka_arg_buf(a), ka_arg_f64(0.5_c_double), ka_arg_i32(n)]
  call check(ka_launch(q, add, ka_range_1d(n), args, ev(1)), 'launch ev')
  call check(ka_event_wait(ev(1), KA_WAIT_FOREVER), 'event wait')
  call check(ka_event_release(ev(1)), 'event release')
  call check(ka_buffer_create_zeroed(dev, bytes, b), 'create zeroed')
  call check(ka_launch(q, add, ka_range_1d(n), args, ev(1)), 'launch ev 2')
  call check(ka_buffer_copy(q, b, 0_c_size_t, a, 0_c_size_t, bytes, ev(2)), 'copy')
  call check(ka_wait_any(ev, KA_WAIT_FOREVER, idx), 'wait any')
  call expect(idx == 0 .or. idx == 1, 'ka_wait_any: a 0-based index')
  call check(ka_wait_all(ev, KA_WAIT_FOREVER), 'wait all')
  call check(ka_event_release(ev(1)), 'release 1')
  call check(ka_event_release(ev(2)), 'release 2')
  call expect(ka_event_wait(ev(1), 0_c_int64_t) == KA_ERR_INVALID_HANDLE, 'a released event is stale')
  call check(ka_buffer_read(q, y, b, 0_c_size_t, bytes), 'read')
  call expect(all(abs(y - (x + 1)) < 1e-9_c_double), 'two adds of 0.5, copied')

  ! A wrapped Fortran array, read through a map.
  call check(ka_buffer_wrap(dev, x, bytes, w), 'wrap')
  args(1) = ka_arg_buf(w)
  call check(ka_launch(q, add, ka_range_1d(n), args), 'launch on wrapped')
  call check(ka_buffer_map(q, w, 0_c_size_t, bytes, KA_MAP_READ, mp), 'map')
  call c_f_pointer(mp, view, [n])
  call expect(all(abs(view - [(real(i, c_double) + 0.5_c_double, i = 1, n)]) < 1e-9_c_double), 'the wrapped array, mapped')
  call check(ka_buffer_unmap(q, w, mp), 'unmap')

  ! A 3-D range over a column-major array: dimension 0 runs down a column.
  call check(ka_buffer_create(dev, int(4 * n0 * n1 * n2, c_size_t), c), 'create cube')
  call check(ka_launch(q, idx3, ka_range_3d(n0, n1, n2), [ka_arg_buf(c), ka_arg_i32(n0), ka_arg_i32(n1)]), 'launch 3-D')
  call check(ka_buffer_read(q, cube, c, 0_c_size_t, int(4 * n0 * n1 * n2, c_size_t)), 'read cube')
  do l = 1, n2
    do j = 1, n1
      do i = 1, n0
        if (cube(i, j, l) /= i + 100 * j + 10000 * l) fails = fails + 1
      end do
    end do
  end do
  call expect(fails == 0, 'cube(i, j, l) at global id (i-1, j-1, l-1)')

  ! A graph of two launches, the second's value changed before a replay.
  call check(ka_buffer_write(q, a, 0_c_size_t, x, bytes), 'write 2')
  args = [ka_arg_buf(a), ka_arg_f64(1.0_c_double), ka_arg_i32(n)]
  call check(ka_graph_begin(q), 'graph begin')
  call check(ka_launch(q, add, ka_range_1d(n), args), 'record 1')
  call check(ka_launch(q, add, ka_range_1d(n), args), 'record 2')
  call check(ka_graph_last_node(q, node), 'last node')
  call check(ka_graph_end(q, g), 'graph end')
  call check(ka_graph_set_arg(g, node, 1_c_int32_t, ka_arg_f64(10.0_c_double)), 'set arg')
  call check(ka_graph_launch(q, g), 'graph launch')
  call check(ka_queue_finish(q), 'finish')
  call check(ka_buffer_read(q, y, a, 0_c_size_t, bytes), 'read graph')
  call expect(all(abs(y - (x + 11)) < 1e-9_c_double), 'graph: 1 + 10 added')
  call check(ka_graph_release(g), 'graph release')

  ! A program from a file.
  open (newunit=u, file='test_fortran_calls.cl', status='replace', action='write')
  write (u, '(a)') src
  close (u)
  call check(ka_program_build_file(dev, 'test_fortran_calls.cl', pf), 'build file')
  call check(ka_kernel_get(pf, 'add', addf), 'kernel from file')
  call check(ka_program_release(pf), 'release file program')

  ! Failures: a build error's log, an unknown kernel.
  st = ka_program_build(dev, 'KA_KERNEL(bad, int x) { this is not C; }', pf)
  detail = ka_last_error()
  call expect(st == KA_ERR_BUILD_FAILED .and. index(detail, 'error') > 0, 'a build error and its log')
  call expect(ka_kernel_get(p, 'nope', addf) == KA_ERR_KERNEL_NOT_FOUND, 'an unknown kernel')
  call expect(ka_launch(q, add, ka_range_1d(n), args(1:2)) == KA_ERR_ARG_COUNT, 'too few arguments')
  call expect(ka_launch(q, add, ka_range_1d(n), [args(1), ka_arg_i32(1), args(3)]) == KA_ERR_ARG_TYPE, &
              'an integer for a double')

  call check(ka_buffer_release(w), 'release w')
  call check(ka_buffer_release(a), 'release a')
  call check(ka_buffer_release(b), 'release b')
  call check(ka_buffer_release(c), 'release c')
  call check(ka_program_release(p), 'release p')
  call check(ka_queue_release(q), 'release q')
  call check(ka_device_close(dev), 'close')
  deallocate(detail) ! a main program's variables are saved: LeakSanitizer would report it
  if (fails /= 0) error stop 1
  print '(a)', 'Fortran calls: events, copies, wrap and map, 3-D ranges, graphs, files, errors: ok'
end program
