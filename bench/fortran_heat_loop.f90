! The time loop of examples/heat.f90 as a routine that C can call: the Fortran
! half of fortran-heat-bench (bench/fortran_heat_bench.c), which times it against
! the same loop written in C on the same queue, kernel and buffers.
module fortran_heat_loop
  use libka
  use, intrinsic :: iso_c_binding
  implicit none
contains
  ! steps launches of the heat kernel from b1 into b2 and back, as heat.f90
  ! writes them (a caller-built argument array, a column per direction), then
  ! a ka_queue_finish. Returns the first status that is not KA_OK.
  integer(c_int) function fortran_heat_steps(q, k, b1, b2, nx, ny, steps) bind(c) result(st)
    type(ka_queue), value :: q
    type(ka_kernel), value :: k
    type(ka_buffer), value :: b1, b2
    integer(c_int), value :: nx, ny, steps
    type(ka_arg) :: args(4, 2)
    type(ka_range) :: r
    integer :: s
    r = ka_range_2d(nx, ny)
    args(:, 1) = [ka_arg_buf(b2), ka_arg_buf(b1), ka_arg_i32(nx), ka_arg_i32(ny)]
    args(:, 2) = [ka_arg_buf(b1), ka_arg_buf(b2), ka_arg_i32(nx), ka_arg_i32(ny)]
    do s = 1, steps
      st = ka_launch(q, k, r, args(:, mod(s - 1, 2) + 1))
      if (st /= KA_OK) return
    end do
    st = ka_queue_finish(q)
  end function
end module fortran_heat_loop
