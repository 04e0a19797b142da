"""Bug: the auxiliary head is registered but forward() never uses it, and DDP runs with
find_unused_parameters=False: the second iteration fails with DDP's reduction error."""
import zoo_common

zoo_common.train(zoo_common.options(use_helper=True), use_aux=False)
