! The Fortran tests' checks: check stops at a failed call with its status and
! detail; expect counts a failed expectation in fails, which the test reads at
! its end.
module fortran_check
  use libka
  implicit none
  integer :: fails = 0
contains
  subroutine check(s, what)
    integer(c_int), intent(in) :: s
    character(len=*), intent(in) :: what
    if (s /= KA_OK) then
      print '(a)', what // ': ' // ka_status_name(s) // ': ' // ka_last_error()
      error stop 1
    end if
  end subroutine
  subroutine expect(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      print '(a)', 'failed: ' // what
      fails = fails + 1
    end if
  end subroutine
end module fortran_check
