! The 2-D heat equation's time loop in Fortran with libka: one stencil launch
! per step on ping-pong buffers, checked against the same loop in plain Fortran.
!
! Column-major arrays: u(nx, ny) stores u(i, j) at offset (i-1) + (j-1)*nx, so
! the 2-D range is {nx, ny}: dimension 0 (ka_global_id(0) = i-1) runs down a
! column, the contiguous direction, and dimension 1 (ka_global_id(1) = j-1)
! across columns; the kernel's flat index is j*nx + i (0-based).
!
! usage: heat_f90 [steps] [nx] [ny] [--check-alloc] [--time]
!   --check-alloc: a counting allocator set through ka_set_allocator (a Fortran
!   function, bind(c)) counts libka's heap calls over the warmed-up launches,
!   which must be none.
!   --time: then times 7 runs of `steps` launches and a ka_queue_finish each,
!   and prints the median in microseconds per step (ka-bench timeloop's `ka` row
!   times the same loop in C).
module heat_alloc
  use, intrinsic :: iso_c_binding
  implicit none
  ! Counted only while counting is on: libka allocates from this thread then
  ! (the launches), and nothing else of libka runs meanwhile.
  integer(c_int64_t), volatile :: allocs = 0, frees = 0
  logical, volatile :: counting = .false.
  interface
    type(c_ptr) function c_malloc(n) bind(c, name='malloc')
      import; integer(c_size_t), value :: n
    end function
    subroutine c_free(p) bind(c, name='free')
      import; type(c_ptr), value :: p
    end subroutine
  end interface
contains
  type(c_ptr) function count_alloc(n, user) bind(c)
    integer(c_size_t), value :: n
    type(c_ptr), value :: user
    if (counting) allocs = allocs + 1
    count_alloc = c_malloc(n)
  end function
  subroutine count_free(p, n, user) bind(c)
    type(c_ptr), value :: p, user
    integer(c_size_t), value :: n
    if (counting) frees = frees + 1
    call c_free(p)
  end subroutine
end module heat_alloc

program heat
  use libka
  use heat_alloc
  use, intrinsic :: iso_fortran_env, only: int64, real64
  implicit none
  character(len=*), parameter :: nl = new_line('a')
  ! Dimension 0 is i (down a column); dst and src are the arrays' storage in Fortran order.
  character(len=*), parameter :: src = &
    'KA_KERNEL(heat, KA_GLOBAL float *dst, KA_GLOBAL const float *src, int nx, int ny) {' // nl // &
    '    if (!ka_in_range()) return;' // nl // &
    '    size_t i = ka_global_id(0), j = ka_global_id(1), k = j * (size_t)nx + i;' // nl // &
    '    if (i == 0 || j == 0 || i == (size_t)nx - 1 || j == (size_t)ny - 1) { dst[k] = src[k]; return; }' // nl // &
    '    dst[k] = ((((src[k] + src[k - 1]) + src[k + 1]) + src[k - nx]) + src[k + nx]) * 0.2f;' // nl // &
    '}' // nl
  integer :: steps = 100, nx = 67, ny = 45, s, i, j, iarg
  logical :: check_alloc = .false., time_it = .false.
  integer(int64) :: t0, t1, rate
  real(real64) :: us(7), tmp
  character(len=32) :: word
  real(c_float), allocatable :: u(:, :), v(:, :), ref(:, :), out(:, :)
  type(ka_device) :: dev
  type(ka_queue) :: q
  type(ka_program) :: prog
  type(ka_kernel) :: k
  type(ka_buffer) :: buf(2)
  type(ka_range) :: r
  type(ka_arg) :: args(4, 2) ! column s: the arguments of a step from buf(s) into the other
  type(ka_allocator) :: counter
  integer(c_size_t) :: bytes
  real :: err

  j = 0
  do iarg = 1, command_argument_count()
    call get_command_argument(iarg, word)
    if (word == '--check-alloc') then
      check_alloc = .true.
    else if (word == '--time') then
      time_it = .true.
    else
      j = j + 1
      read (word, *) i
      if (j == 1) steps = i
      if (j == 2) nx = i
      if (j == 3) ny = i
    end if
  end do
  ! Before any libka object exists (ka.h: swap allocators only then).
  if (check_alloc) then
    counter = ka_allocator(c_funloc(count_alloc), c_funloc(count_free), c_null_ptr)
    call ka_set_allocator(counter)
    counting = .true. ! the set-up allocates: this shows the counter sees libka's calls
  end if

  allocate(u(nx, ny), v(nx, ny), ref(nx, ny), out(nx, ny))
  do j = 1, ny
    do i = 1, nx
      u(i, j) = real(mod(i * 7 + j * 13, 17), c_float) + merge(100.0_c_float, 0.0_c_float, i == 1)
    end do
  end do

  call check(ka_device_open('', dev), 'ka_device_open')
  call check(ka_queue_create(dev, q=q), 'ka_queue_create')
  call check(ka_program_build(dev, src, prog), 'ka_program_build')
  call check(ka_kernel_get(prog, 'heat', k), 'ka_kernel_get')
  bytes = storage_size(u) / 8 * size(u, kind=c_size_t)
  do s = 1, 2
    call check(ka_buffer_create(dev, bytes, buf(s)), 'ka_buffer_create')
    call check(ka_buffer_write(q, buf(s), 0_c_size_t, u, bytes), 'ka_buffer_write')
  end do
  r = ka_range_2d(nx, ny)
  ! Built once; a launch reads them, so the loop allocates nothing.
  args(:, 1) = [ka_arg_buf(buf(2)), ka_arg_buf(buf(1)), ka_arg_i32(nx), ka_arg_i32(ny)]
  args(:, 2) = [ka_arg_buf(buf(1)), ka_arg_buf(buf(2)), ka_arg_i32(nx), ka_arg_i32(ny)]

  if (check_alloc) then
    counting = .false.
    if (allocs == 0) then
      print '(a)', 'heat: the counting allocator saw no allocation in the set-up'
      error stop 1
    end if
    allocs = 0
    frees = 0
    ! Warm-up (PoCL builds each path's kernel at its first launch), then the
    ! counted steps, then the same number again, so the state is 2*steps steps on.
    do s = 1, steps
      call check(ka_launch(q, k, r, args(:, mod(s - 1, 2) + 1)), 'ka_launch')
    end do
    call check(ka_queue_finish(q), 'ka_queue_finish')
    counting = .true.
    do s = 1, steps
      call check(ka_launch(q, k, r, args(:, mod(s - 1, 2) + 1)), 'ka_launch')
    end do
    counting = .false.
    steps = 2 * steps
    if (allocs /= 0 .or. frees /= 0) then
      print '(a,i0,a,i0,a,i0,a)', 'heat: ', allocs, ' allocations and ', frees, ' frees in libka over ', &
            steps / 2, ' launches'
      error stop 1
    end if
  else
    do s = 1, steps
      call check(ka_launch(q, k, r, args(:, mod(s - 1, 2) + 1)), 'ka_launch')
    end do
  end if
  ! After an odd number of steps the state is in buf(2).
  call check(ka_buffer_read(q, out, buf(mod(steps, 2) + 1), 0_c_size_t, bytes), 'ka_buffer_read')

  if (time_it) then
    call system_clock(count_rate=rate)
    do i = 1, size(us)
      call system_clock(t0)
      do s = 1, steps
        call check(ka_launch(q, k, r, args(:, mod(s - 1, 2) + 1)), 'ka_launch')
      end do
      call check(ka_queue_finish(q), 'ka_queue_finish')
      call system_clock(t1)
      us(i) = real(t1 - t0, real64) / real(rate, real64) * 1e6_real64 / steps
    end do
    do i = 2, size(us) ! insertion sort for the median
      tmp = us(i)
      j = i - 1
      do while (j >= 1)
        if (us(j) <= tmp) exit
        us(j + 1) = us(j)
        j = j - 1
      end do
      us(j + 1) = tmp
    end do
    print '(a,i0,a,i0,a,f10.3,a)', 'heat: ', nx, ' x ', ny, ': ', us(4), ' us per step (median of 7 runs)'
  end if

  ! The plain Fortran loop, in the kernel's order of additions.
  ref = u
  do s = 1, steps
    v = ref
    do j = 2, ny - 1
      do i = 2, nx - 1
        v(i, j) = ((((ref(i, j) + ref(i - 1, j)) + ref(i + 1, j)) + ref(i, j - 1)) + ref(i, j + 1)) * 0.2_c_float
      end do
    end do
    ref = v
  end do
  err = maxval(abs(out - ref))

  do s = 1, 2
    call check(ka_buffer_release(buf(s)), 'ka_buffer_release')
  end do
  call check(ka_program_release(prog), 'ka_program_release')
  call check(ka_queue_release(q), 'ka_queue_release')
  call check(ka_device_close(dev), 'ka_device_close')
  if (check_alloc) call ka_set_allocator()

  ! Contraction into fused multiply-adds may differ in the last bits.
  if (err > 1e-4 * maxval(abs(ref))) then
    print '(a,es10.3)', 'heat: libka and the Fortran loop differ by ', err
    error stop 1
  end if
  deallocate(u, v, ref, out) ! main-program variables are saved: LeakSanitizer would report them
  print '(a,i0,a,i0,a,i0,a,es9.2,a)', 'heat: ', nx, ' x ', ny, ', ', steps, ' steps, match the Fortran loop (max diff ', &
        err, ')'
  if (check_alloc) print '(a,i0,a)', 'heat: no allocation in libka over ', steps / 2, ' warmed-up launches'
contains
  subroutine check(st, what)
    integer(c_int), intent(in) :: st
    character(len=*), intent(in) :: what
    if (st /= KA_OK) then
      print '(a)', 'heat: ' // what // ': ' // ka_status_name(st) // ': ' // ka_last_error()
      error stop 1
    end if
  end subroutine
end program heat
