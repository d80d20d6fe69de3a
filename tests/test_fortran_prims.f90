! The Fortran module's primitives (ka_prims.h) against plain Fortran: reduce
! (built-in, with its event, and user operators with maps on i32 and f64), scan,
! sort of keys and of pairs,
! argsort, select by flags and by a predicate, histogram, searchsorted,
! segmented reduce; a plan with a bad operator gives the build's log. A plan
! made through ka_prims_plan_create_desc also checks the module's copy of
! ka_prims_desc: a field out of place would make a plan that computes
! something else.
program test_fortran_prims
  use libka
  use fortran_check
  implicit none
  integer, parameter :: n = 1000, nseg = 10
  integer(c_size_t), parameter :: z = 0_c_size_t, nn = int(n, c_size_t)
  type(ka_device) :: dev
  type(ka_queue) :: q
  type(ka_prims_plan) :: p
  type(ka_event) :: ev
  type(ka_buffer) :: bi, bo, bv, bc, bf, bs
  integer(c_int32_t) :: x(n), y(n), v(n), ref(n), sel(n), hist(8), one(1)
  integer(c_int64_t) :: cnt(1), idx(n), offs(nseg + 1)
  real(c_double) :: d(n), dsum(1)
  integer(kind=1) :: flags(n)
  integer :: i, j, k
  integer(c_int) :: st
  character(len=:), allocatable :: detail

  call check(ka_device_open('', dev), 'open')
  call check(ka_queue_create(dev, q=q), 'queue')
  ! Values in 0..96, repeated and unordered (sorting is stable: checked with values).
  x = [(mod(i * 37, 97), i = 1, n)]
  call check(ka_buffer_create(dev, 4 * nn, bi), 'create in')
  call check(ka_buffer_create(dev, 8 * nn, bo), 'create out')
  call check(ka_buffer_create(dev, 8 * nn, bv), 'create values')
  call check(ka_buffer_create(dev, 8 * nn, bc), 'create count')
  call check(ka_buffer_create(dev, nn, bf), 'create flags')
  call check(ka_buffer_create(dev, 8 * nn, bs), 'create sorted')
  call check(ka_buffer_write(q, bi, z, x, 4 * nn), 'write in')

  ! Reduce: the sum, the max.
  call check(ka_prims_plan_create(dev, KA_PRIM_REDUCE, KA_DTYPE_I32, nn, 0_c_int32_t, p), 'plan reduce')
  call check(ka_reduce(q, p, bo, z, bi, z, nn, KA_REDUCE_SUM), 'reduce sum')
  call check(ka_buffer_read(q, one, bo, z, 4_c_size_t), 'read sum')
  call expect(one(1) == sum(x), 'reduce sum')
  call check(ka_reduce(q, p, bo, z, bi, z, nn, KA_REDUCE_MAX, ev), 'reduce max with its event')
  call check(ka_event_wait(ev, KA_WAIT_FOREVER), 'wait reduce')
  call check(ka_event_release(ev), 'release reduce event')
  call check(ka_buffer_read(q, one, bo, z, 4_c_size_t), 'read max')
  call expect(one(1) == maxval(x), 'reduce max')
  call check(ka_prims_plan_release(p), 'release reduce')

  ! A user operator on i32: the maximum of x + 1, by an expression.
  call check(ka_prims_plan_create_desc(dev, KA_PRIM_REDUCE, KA_DTYPE_I32, nn, p, op='a > b ? a : b', &
                                       identity='-2147483647 - 1', map='x + 1'), 'plan user op i32')
  call check(ka_reduce(q, p, bo, z, bi, z, nn, KA_REDUCE_USER), 'reduce user i32')
  call check(ka_buffer_read(q, one, bo, z, 4_c_size_t), 'read user i32')
  call expect(one(1) == maxval(x) + 1, 'reduce with op max and map x + 1 (i32)')
  call check(ka_prims_plan_release(p), 'release user i32')
  call expect(.not. c_associated(p%ptr), 'a released plan is emptied')
  call check(ka_prims_plan_release(p), 'a second release is a no-op')

  ! A user operator with a map: the sum of squares of doubles (exact in binary: integers).
  d = [(real(mod(i, 13), c_double), i = 1, n)]
  call check(ka_buffer_write(q, bv, z, d, 8 * nn), 'write doubles')
  st = ka_prims_plan_create_desc(dev, KA_PRIM_REDUCE, KA_DTYPE_F64, nn, p, op='a + b', identity='0', map='x * x')
  if (st == KA_ERR_UNSUPPORTED) then
    print '(a)', 'skipped: the user operator on doubles (' // ka_last_error() // ')'
  else
    call check(st, 'plan user op')
    call check(ka_reduce(q, p, bo, z, bv, z, nn, KA_REDUCE_USER), 'reduce user')
    call check(ka_buffer_read(q, dsum, bo, z, 8_c_size_t), 'read user')
    call expect(abs(dsum(1) - sum(d * d)) < 0.5_c_double, 'reduce with op a + b and map x * x (integers: exact)')
    call check(ka_prims_plan_release(p), 'release user')
  end if

  ! Scan, inclusive and exclusive (in place for the second).
  call check(ka_prims_plan_create(dev, KA_PRIM_SCAN, KA_DTYPE_I32, nn, 0_c_int32_t, p), 'plan scan')
  call check(ka_scan(q, p, bo, z, bi, z, nn, 0), 'scan inclusive')
  call check(ka_buffer_read(q, y, bo, z, 4 * nn), 'read scan')
  ref(1) = x(1)
  do i = 2, n
    ref(i) = ref(i - 1) + x(i)
  end do
  call expect(all(y == ref), 'inclusive scan')
  call check(ka_buffer_copy(q, bo, z, bi, z, 4 * nn), 'copy for in place')
  call check(ka_scan(q, p, bo, z, bo, z, nn, 1), 'scan exclusive in place')
  call check(ka_buffer_read(q, y, bo, z, 4 * nn), 'read exclusive')
  call expect(y(1) == 0 .and. all(y(2:) == ref(:n - 1)), 'exclusive scan, in place')
  call check(ka_prims_plan_release(p), 'release scan')

  ! Sort of pairs: keys x, values their 1-based positions; stable.
  v = [(i, i = 1, n)]
  call check(ka_buffer_write(q, bs, z, x, 4 * nn), 'write keys')
  call check(ka_buffer_write(q, bv, z, v, 4 * nn), 'write values')
  call check(ka_prims_plan_create(dev, KA_PRIM_SORT, KA_DTYPE_I32, nn, KA_PRIM_SORT_VALUES, p), 'plan sort pairs')
  call check(ka_sort_pairs(q, p, bs, z, bv, z, nn), 'sort pairs')
  call check(ka_buffer_read(q, y, bs, z, 4 * nn), 'read keys')
  call check(ka_buffer_read(q, v, bv, z, 4 * nn), 'read values')
  k = 0
  do i = 2, n
    if (y(i - 1) > y(i) .or. (y(i - 1) == y(i) .and. v(i - 1) > v(i))) k = k + 1
  end do
  call expect(k == 0 .and. all(x(v) == y), 'sort of pairs: ordered, stable, values moved with their keys')
  call check(ka_prims_plan_release(p), 'release sort')

  ! Sort of keys alone (values ka_buffer()).
  call check(ka_prims_plan_create(dev, KA_PRIM_SORT, KA_DTYPE_I32, nn, 0_c_int32_t, p), 'plan sort keys')
  call check(ka_buffer_write(q, bo, z, x, 4 * nn), 'write keys 2')
  call check(ka_sort(q, p, bo, z, ka_buffer(), z, nn), 'sort keys')
  call check(ka_buffer_read(q, v, bo, z, 4 * nn), 'read sorted keys')
  call expect(all(v == y), 'sort of keys: as the keys of the sorted pairs')
  call check(ka_prims_plan_release(p), 'release sort keys')

  ! Argsort (0-based u64 indices).
  call check(ka_prims_plan_create(dev, KA_PRIM_SORT, KA_DTYPE_I32, nn, KA_PRIM_ARGSORT64, p), 'plan argsort')
  call check(ka_argsort(q, p, bo, z, bi, z, nn), 'argsort')
  call check(ka_buffer_read(q, idx, bo, z, 8 * nn), 'read perm')
  call expect(all(x(idx + 1) == y), 'argsort: x(perm + 1) is the sorted keys')
  call check(ka_prims_plan_release(p), 'release argsort')

  ! Select by flags, then by a predicate.
  flags = 0_1
  where (mod(x, 3) == 0) flags = 1_1
  call check(ka_buffer_write(q, bf, z, flags, nn), 'write flags')
  call check(ka_prims_plan_create(dev, KA_PRIM_SELECT, KA_DTYPE_I32, nn, 0_c_int32_t, p), 'plan select')
  call check(ka_select(q, p, bo, z, bc, z, bi, z, bf, z, nn), 'select flagged')
  call check(ka_buffer_read(q, cnt, bc, z, 8_c_size_t), 'read count')
  call check(ka_buffer_read(q, sel, bo, z, 4 * nn), 'read selected')
  k = count(mod(x, 3) == 0)
  call expect(cnt(1) == k .and. all(sel(1:k) == pack(x, mod(x, 3) == 0)), 'select by flags')
  call check(ka_prims_plan_release(p), 'release select')
  call check(ka_prims_plan_create_desc(dev, KA_PRIM_SELECT, KA_DTYPE_I32, nn, p, predicate='x > 50'), 'plan predicate')
  call check(ka_select(q, p, bo, z, bc, z, bi, z, ka_buffer(), z, nn), 'select predicate')
  call check(ka_buffer_read(q, cnt, bc, z, 8_c_size_t), 'read count 2')
  call check(ka_buffer_read(q, sel, bo, z, 4 * nn), 'read selected 2')
  k = count(x > 50)
  call expect(cnt(1) == k .and. all(sel(1:k) == pack(x, x > 50)), 'select by the predicate x > 50')
  call check(ka_prims_plan_release(p), 'release predicate')

  ! Histogram: 8 bins over [0, 96).
  call check(ka_prims_plan_create_desc(dev, KA_PRIM_HISTOGRAM, KA_DTYPE_I32, nn, p, bins=8_c_int32_t), 'plan hist')
  call check(ka_histogram(q, p, bo, z, bi, z, nn, 0.0_c_double, 96.0_c_double), 'histogram')
  call check(ka_buffer_read(q, hist, bo, z, 32_c_size_t), 'read hist')
  call expect(all(hist == [(count(x >= 12 * j .and. x < 12 * (j + 1)), j = 0, 7)]), 'histogram of 8 bins')
  call check(ka_prims_plan_release(p), 'release hist')

  ! Searchsorted: the needles x in the sorted keys y (in bs), lower bound.
  call check(ka_prims_plan_create(dev, KA_PRIM_SEARCHSORTED, KA_DTYPE_I32, nn, 0_c_int32_t, p), 'plan search')
  call check(ka_searchsorted(q, p, bo, z, bs, z, nn, bi, z, nn, 0), 'searchsorted')
  call check(ka_buffer_read(q, idx, bo, z, 8 * nn), 'read search')
  call expect(all([(idx(i) == count(y < x(i)), i = 1, n)]), 'searchsorted: lower bounds')
  call check(ka_prims_plan_release(p), 'release search')

  ! Segmented reduce: sums of nseg segments of 100 (0-based offsets).
  offs = [(100_c_int64_t * i, i = 0, nseg)]
  call check(ka_buffer_write(q, bv, z, offs, 8 * int(nseg + 1, c_size_t)), 'write offsets')
  call check(ka_prims_plan_create(dev, KA_PRIM_SEGMENTED_REDUCE, KA_DTYPE_I32, int(nseg, c_size_t), 0_c_int32_t, p), &
             'plan segreduce')
  call check(ka_segmented_reduce(q, p, bo, z, bi, z, bv, z, int(nseg, c_size_t), KA_REDUCE_SUM), 'segmented reduce')
  call check(ka_buffer_read(q, sel, bo, z, 4 * int(nseg, c_size_t)), 'read segments')
  call expect(all(sel(1:nseg) == [(sum(x(100 * j + 1:100 * (j + 1))), j = 0, nseg - 1)]), 'segmented sums')
  call check(ka_prims_plan_release(p), 'release segreduce')

  ! A bad operator: the build fails with its log; the plan stays unmade.
  st = ka_prims_plan_create_desc(dev, KA_PRIM_REDUCE, KA_DTYPE_I32, nn, p, op='a +* b', identity='0')
  detail = ka_last_error()
  call expect(st == KA_ERR_BUILD_FAILED .and. index(detail, 'error') > 0 .and. .not. c_associated(p%ptr), &
              'a bad operator: KA_ERR_BUILD_FAILED with the log')

  call check(ka_buffer_release(bi), 'release in')
  call check(ka_buffer_release(bo), 'release out')
  call check(ka_buffer_release(bv), 'release values')
  call check(ka_buffer_release(bc), 'release count')
  call check(ka_buffer_release(bf), 'release flags')
  call check(ka_buffer_release(bs), 'release sorted')
  call check(ka_queue_release(q), 'release q')
  call check(ka_device_close(dev), 'close')
  deallocate(detail)
  if (fails /= 0) error stop 1
  print '(a)', 'Fortran primitives: reduce, user op, scan, sort, argsort, select, histogram, searchsorted, ' // &
               'segmented reduce, a bad operator: ok'
end program
