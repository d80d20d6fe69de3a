! A Fortran program built against the installed module: one launch, read back.
program consumer_fortran
  use libka
  implicit none
  character(len=*), parameter :: src = &
    'KA_KERNEL(twice, KA_GLOBAL double *x, int n) { size_t i = ka_global_id(0); if (i < (size_t)n) x[i] *= 2.0; }'
  integer, parameter :: n = 100
  real(c_double) :: x(n)
  type(ka_device) :: dev
  type(ka_queue) :: q
  type(ka_program) :: p
  type(ka_kernel) :: k
  type(ka_buffer) :: b
  type(ka_arg) :: args(2)
  integer :: i
  x = [(real(i, c_double), i = 1, n)]
  call check(ka_device_open('', dev))
  call check(ka_queue_create(dev, q=q))
  call check(ka_program_build(dev, src, p))
  call check(ka_kernel_get(p, 'twice', k))
  call check(ka_buffer_create(dev, int(8 * n, c_size_t), b))
  call check(ka_buffer_write(q, b, 0_c_size_t, x, int(8 * n, c_size_t)))
  args = [ka_arg_buf(b), ka_arg_i32(n)]
  call check(ka_launch(q, k, ka_range_1d(n), args))
  call check(ka_buffer_read(q, x, b, 0_c_size_t, int(8 * n, c_size_t)))
  if (any(x /= [(2 * real(i, c_double), i = 1, n)])) error stop 'consumer_fortran: wrong values'
  call check(ka_buffer_release(b))
  call check(ka_program_release(p))
  call check(ka_queue_release(q))
  call check(ka_device_close(dev))
  print '(a)', 'consumer_fortran: ok'
contains
  subroutine check(st)
    integer(c_int), intent(in) :: st
    if (st /= KA_OK) then
      print '(a)', ka_status_name(st) // ': ' // ka_last_error()
      error stop 1
    end if
  end subroutine
end program
