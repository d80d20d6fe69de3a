! The Fortran module's structs against C's layout (fortran_layout.c), its
! argument helpers against ka.h's, and its status constants against libka's names.
program test_fortran_layout
  use libka
  use, intrinsic :: iso_c_binding
  implicit none
  interface
    subroutine ka_ftest_layout(out) bind(c)
      import; integer(c_int64_t), intent(out) :: out(*)
    end subroutine
    subroutine ka_ftest_args(out) bind(c)
      import; type(ka_arg), intent(inout) :: out(*)
    end subroutine
  end interface
  integer(c_int64_t) :: c(26), f(26)
  type(ka_arg), target :: a
  type(ka_range), target :: r
  type(ka_queue_config), target :: qc
  type(ka_allocator) :: al
  type(ka_device) :: d
  type(ka_event) :: e
  type(ka_graph_node) :: gn
  type(ka_prims_desc), target :: pd
  type(ka_prims_plan) :: pp
  type(ka_arg) :: ca(6), fa(6)
  integer :: i, fails
  integer(c_int) :: st
  character(len=:), allocatable :: detail

  fails = 0
  call ka_ftest_layout(c)
  f = [c_sizeof(a), off(c_loc(a%size), c_loc(a)), off(c_loc(a%u), c_loc(a)), &
       c_sizeof(r), off(c_loc(r%size), c_loc(r)), off(c_loc(r%workgroup), c_loc(r)), off(c_loc(r%flags), c_loc(r)), &
       c_sizeof(qc), off(c_loc(qc%spin_ns), c_loc(qc)), off(c_loc(qc%inline_max_items), c_loc(qc)), &
       off(c_loc(qc%profiling), c_loc(qc)), c_sizeof(al), c_sizeof(d), c_sizeof(e), c_sizeof(gn), &
       c_sizeof(pd), off(c_loc(pd%max_n), c_loc(pd)), off(c_loc(pd%flags), c_loc(pd)), off(c_loc(pd%source), c_loc(pd)), &
       off(c_loc(pd%predicate), c_loc(pd)), off(c_loc(pd%bins), c_loc(pd)), c_sizeof(pp), &
       int(KA_DTYPE_F64, c_int64_t), int(KA_PRIM_SEGMENTED_REDUCE, c_int64_t), int(KA_REDUCE_USER, c_int64_t), &
       int(KA_PRIM_ARGSORT64, c_int64_t)]
  do i = 1, size(c)
    if (c(i) /= f(i)) then
      print '(a,i0,a,i0,a,i0)', 'layout item ', i, ': C ', c(i), ', Fortran ', f(i)
      fails = fails + 1
    end if
  end do

  call ka_ftest_args(ca)
  fa = [ka_arg_buf(ka_buffer(int(z'123456789abc', c_int64_t))), ka_arg_f64(-2.5_c_double), &
        ka_arg_f32(1.25_c_float), ka_arg_i32(-7_c_int32_t), ka_arg_i64(-1234567890123_c_int64_t), &
        ka_arg_local_bytes(96_c_int64_t)]
  do i = 1, size(ca)
    if (ca(i)%kind /= fa(i)%kind .or. ca(i)%size /= fa(i)%size .or. ca(i)%u /= fa(i)%u) then
      print '(a,i0,a,3(1x,i0),a,3(1x,i0))', 'argument ', i, ': C', ca(i)%kind, ca(i)%size, ca(i)%u, &
            ', Fortran', fa(i)%kind, fa(i)%size, fa(i)%u
      fails = fails + 1
    end if
  end do

  call name_is(KA_OK, 'KA_OK')
  call name_is(KA_ERR_INVALID_ARGUMENT, 'KA_ERR_INVALID_ARGUMENT')
  call name_is(KA_ERR_INVALID_HANDLE, 'KA_ERR_INVALID_HANDLE')
  call name_is(KA_ERR_OUT_OF_MEMORY, 'KA_ERR_OUT_OF_MEMORY')
  call name_is(KA_ERR_DEVICE_OUT_OF_MEMORY, 'KA_ERR_DEVICE_OUT_OF_MEMORY')
  call name_is(KA_ERR_NO_DEVICE, 'KA_ERR_NO_DEVICE')
  call name_is(KA_ERR_BUILD_FAILED, 'KA_ERR_BUILD_FAILED')
  call name_is(KA_ERR_KERNEL_NOT_FOUND, 'KA_ERR_KERNEL_NOT_FOUND')
  call name_is(KA_ERR_INVALID_RANGE, 'KA_ERR_INVALID_RANGE')
  call name_is(KA_ERR_INVALID_WORKGROUP, 'KA_ERR_INVALID_WORKGROUP')
  call name_is(KA_ERR_ARG_COUNT, 'KA_ERR_ARG_COUNT')
  call name_is(KA_ERR_ARG_TYPE, 'KA_ERR_ARG_TYPE')
  call name_is(KA_ERR_UNSUPPORTED, 'KA_ERR_UNSUPPORTED')
  call name_is(KA_ERR_EVENT_POOL_EXHAUSTED, 'KA_ERR_EVENT_POOL_EXHAUSTED')
  call name_is(KA_ERR_TIMEOUT, 'KA_ERR_TIMEOUT')
  call name_is(KA_ERR_DEVICE, 'KA_ERR_DEVICE')
  call name_is(KA_ERR_IN_USE, 'KA_ERR_IN_USE')
  call name_is(KA_ERR_BACKEND_UNAVAILABLE, 'KA_ERR_BACKEND_UNAVAILABLE')
  call name_is(KA_ERR_KERNEL_FAILED, 'KA_ERR_KERNEL_FAILED')
  call name_is(KA_ERR_IO, 'KA_ERR_IO')
  call name_is(KA_ERR_OUT_OF_BOUNDS, 'KA_ERR_OUT_OF_BOUNDS')
  ! A failing call's detail reaches Fortran as a string.
  st = ka_device_open('no-such-device-anywhere', d)
  detail = ka_last_error()
  if (st /= KA_ERR_NO_DEVICE .or. len(detail) == 0) then
    print '(a)', 'ka_device_open of a missing device: not KA_ERR_NO_DEVICE with a detail'
    fails = fails + 1
  end if
  deallocate(detail) ! a main program's variables are saved: LeakSanitizer would report it
  if (fails /= 0) error stop 1
  print '(a)', 'Fortran layout, arguments and status names match C (libka ' // ka_version() // ')'
contains
  integer(c_int64_t) function off(p, base)
    type(c_ptr), intent(in) :: p, base
    off = transfer(p, 0_c_intptr_t) - transfer(base, 0_c_intptr_t)
  end function
  subroutine name_is(st, want)
    integer(c_int), intent(in) :: st
    character(len=*), intent(in) :: want
    if (ka_status_name(st) /= want) then
      print '(a,i0,a)', 'status ', st, ' is named ' // ka_status_name(st) // ', not ' // want
      fails = fails + 1
    end if
  end subroutine
end program
