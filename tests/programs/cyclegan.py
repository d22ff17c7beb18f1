"""CycleGAN (Zhu et al.; as junyanz/pytorch-CycleGAN-and-pix2pix writes it, tiny): a ResNet
generator with ReflectionPad2d, InstanceNorm2d and ConvTranspose2d(output_padding=1), a
PatchGAN discriminator with LeakyReLU(0.2, True), LSGAN loss (MSELoss against
target tensors built with expand_as of registered buffers), cycle and identity L1 losses,
an ImagePool of past fakes (random.uniform, torch.cat of clones), itertools.chain over two
generators' parameters, set_requires_grad, and the linear-decay LambdaLR. Two synthetic
image domains (horizontal vs vertical stripes)."""
import argparse
import functools
import itertools
import random

import torch
import torch.nn as nn


class ResnetBlock(nn.Module):
    def __init__(self, dim, padding_type, norm_layer, use_dropout, use_bias):
        super(ResnetBlock, self).__init__()
        self.conv_block = self.build_conv_block(dim, padding_type, norm_layer, use_dropout, use_bias)

    def build_conv_block(self, dim, padding_type, norm_layer, use_dropout, use_bias):
        conv_block = []
        p = 0
        if padding_type == 'reflect':
            conv_block += [nn.ReflectionPad2d(1)]
        elif padding_type == 'replicate':
            conv_block += [nn.ReplicationPad2d(1)]
        elif padding_type == 'zero':
            p = 1
        else:
            raise NotImplementedError('padding [%s] is not implemented' % padding_type)
        conv_block += [nn.Conv2d(dim, dim, kernel_size=3, padding=p, bias=use_bias), norm_layer(dim), nn.ReLU(True)]
        if use_dropout:
            conv_block += [nn.Dropout(0.5)]
        p = 0
        if padding_type == 'reflect':
            conv_block += [nn.ReflectionPad2d(1)]
        elif padding_type == 'replicate':
            conv_block += [nn.ReplicationPad2d(1)]
        elif padding_type == 'zero':
            p = 1
        conv_block += [nn.Conv2d(dim, dim, kernel_size=3, padding=p, bias=use_bias), norm_layer(dim)]
        return nn.Sequential(*conv_block)

    def forward(self, x):
        out = x + self.conv_block(x)  # add skip connections
        return out


class ResnetGenerator(nn.Module):
    def __init__(self, input_nc, output_nc, ngf=64, norm_layer=nn.BatchNorm2d, use_dropout=False,
                 n_blocks=6, padding_type='reflect'):
        assert(n_blocks >= 0)
        super(ResnetGenerator, self).__init__()
        if type(norm_layer) == functools.partial:
            use_bias = norm_layer.func == nn.InstanceNorm2d
        else:
            use_bias = norm_layer == nn.InstanceNorm2d

        model = [nn.ReflectionPad2d(3),
                 nn.Conv2d(input_nc, ngf, kernel_size=7, padding=0, bias=use_bias),
                 norm_layer(ngf),
                 nn.ReLU(True)]

        n_downsampling = 2
        for i in range(n_downsampling):  # add downsampling layers
            mult = 2 ** i
            model += [nn.Conv2d(ngf * mult, ngf * mult * 2, kernel_size=3, stride=2, padding=1, bias=use_bias),
                      norm_layer(ngf * mult * 2),
                      nn.ReLU(True)]

        mult = 2 ** n_downsampling
        for i in range(n_blocks):       # add ResNet blocks
            model += [ResnetBlock(ngf * mult, padding_type=padding_type, norm_layer=norm_layer,
                                  use_dropout=use_dropout, use_bias=use_bias)]

        for i in range(n_downsampling):  # add upsampling layers
            mult = 2 ** (n_downsampling - i)
            model += [nn.ConvTranspose2d(ngf * mult, int(ngf * mult / 2),
                                         kernel_size=3, stride=2,
                                         padding=1, output_padding=1,
                                         bias=use_bias),
                      norm_layer(int(ngf * mult / 2)),
                      nn.ReLU(True)]
        model += [nn.ReflectionPad2d(3)]
        model += [nn.Conv2d(ngf, output_nc, kernel_size=7, padding=0)]
        model += [nn.Tanh()]

        self.model = nn.Sequential(*model)

    def forward(self, input):
        return self.model(input)


class NLayerDiscriminator(nn.Module):
    def __init__(self, input_nc, ndf=64, n_layers=3, norm_layer=nn.BatchNorm2d):
        super(NLayerDiscriminator, self).__init__()
        if type(norm_layer) == functools.partial:
            use_bias = norm_layer.func == nn.InstanceNorm2d
        else:
            use_bias = norm_layer == nn.InstanceNorm2d

        kw = 4
        padw = 1
        sequence = [nn.Conv2d(input_nc, ndf, kernel_size=kw, stride=2, padding=padw), nn.LeakyReLU(0.2, True)]
        nf_mult = 1
        nf_mult_prev = 1
        for n in range(1, n_layers):  # gradually increase the number of filters
            nf_mult_prev = nf_mult
            nf_mult = min(2 ** n, 8)
            sequence += [
                nn.Conv2d(ndf * nf_mult_prev, ndf * nf_mult, kernel_size=kw, stride=2, padding=padw, bias=use_bias),
                norm_layer(ndf * nf_mult),
                nn.LeakyReLU(0.2, True)
            ]

        nf_mult_prev = nf_mult
        nf_mult = min(2 ** n_layers, 8)
        sequence += [
            nn.Conv2d(ndf * nf_mult_prev, ndf * nf_mult, kernel_size=kw, stride=1, padding=padw, bias=use_bias),
            norm_layer(ndf * nf_mult),
            nn.LeakyReLU(0.2, True)
        ]

        sequence += [nn.Conv2d(ndf * nf_mult, 1, kernel_size=kw, stride=1, padding=padw)]  # output 1 channel prediction map
        self.model = nn.Sequential(*sequence)

    def forward(self, input):
        return self.model(input)


class GANLoss(nn.Module):
    def __init__(self, gan_mode, target_real_label=1.0, target_fake_label=0.0):
        super(GANLoss, self).__init__()
        self.register_buffer('real_label', torch.tensor(target_real_label))
        self.register_buffer('fake_label', torch.tensor(target_fake_label))
        self.gan_mode = gan_mode
        if gan_mode == 'lsgan':
            self.loss = nn.MSELoss()
        elif gan_mode == 'vanilla':
            self.loss = nn.BCEWithLogitsLoss()
        else:
            raise NotImplementedError('gan mode %s not implemented' % gan_mode)

    def get_target_tensor(self, prediction, target_is_real):
        if target_is_real:
            target_tensor = self.real_label
        else:
            target_tensor = self.fake_label
        return target_tensor.expand_as(prediction)

    def __call__(self, prediction, target_is_real):
        target_tensor = self.get_target_tensor(prediction, target_is_real)
        loss = self.loss(prediction, target_tensor)
        return loss


class ImagePool():
    def __init__(self, pool_size):
        self.pool_size = pool_size
        if self.pool_size > 0:  # create an empty pool
            self.num_imgs = 0
            self.images = []

    def query(self, images):
        if self.pool_size == 0:  # if the buffer size is 0, do nothing
            return images
        return_images = []
        for image in images:
            image = torch.unsqueeze(image.data, 0)
            if self.num_imgs < self.pool_size:   # if the buffer is not full; keep inserting current images to the buffer
                self.num_imgs = self.num_imgs + 1
                self.images.append(image)
                return_images.append(image)
            else:
                p = random.uniform(0, 1)
                if p > 0.5:  # by 50% chance, the buffer will return a previously stored image, and insert the current image into the buffer
                    random_id = random.randint(0, self.pool_size - 1)  # randint is inclusive
                    tmp = self.images[random_id].clone()
                    self.images[random_id] = image
                    return_images.append(tmp)
                else:       # by another 50% chance, the buffer will return the current image
                    return_images.append(image)
        return_images = torch.cat(return_images, 0)   # collect all the images and return
        return return_images


def init_weights(net, init_type='normal', init_gain=0.02):
    def init_func(m):  # define the initialization function
        classname = m.__class__.__name__
        if hasattr(m, 'weight') and (classname.find('Conv') != -1 or classname.find('Linear') != -1):
            if init_type == 'normal':
                nn.init.normal_(m.weight.data, 0.0, init_gain)
            elif init_type == 'xavier':
                nn.init.xavier_normal_(m.weight.data, gain=init_gain)
            if hasattr(m, 'bias') and m.bias is not None:
                nn.init.constant_(m.bias.data, 0.0)
        elif classname.find('BatchNorm2d') != -1:
            nn.init.normal_(m.weight.data, 1.0, init_gain)
            nn.init.constant_(m.bias.data, 0.0)

    print('initialize network with %s' % init_type)
    net.apply(init_func)  # apply the initialization function <init_func>


def set_requires_grad(nets, requires_grad=False):
    if not isinstance(nets, list):
        nets = [nets]
    for net in nets:
        if net is not None:
            for param in net.parameters():
                param.requires_grad = requires_grad


def stripes(n, vertical, generator):
    base = torch.rand(n, 3, 1, 1, generator=generator) * 2 - 1
    phase = torch.rand(n, 1, 1, 1, generator=generator) * 6.28
    coords = torch.arange(16.).view(1, 1, 16, 1) if not vertical else torch.arange(16.).view(1, 1, 1, 16)
    return (base * torch.sin(coords + phase)).expand(n, 3, 16, 16).contiguous()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--n_epochs', type=int, default=2)
    parser.add_argument('--n_epochs_decay', type=int, default=2)
    parser.add_argument('--lr', type=float, default=0.0002)
    parser.add_argument('--beta1', type=float, default=0.5)
    parser.add_argument('--lambda_A', type=float, default=10.0)
    parser.add_argument('--lambda_B', type=float, default=10.0)
    parser.add_argument('--lambda_identity', type=float, default=0.5)
    parser.add_argument('--pool_size', type=int, default=4)
    opt = parser.parse_args()

    random.seed(0)
    torch.manual_seed(0)
    device = torch.device('cuda:0' if torch.cuda.is_available() else 'cpu')
    norm_layer = functools.partial(nn.InstanceNorm2d, affine=False, track_running_stats=False)
    netG_A = ResnetGenerator(3, 3, 8, norm_layer=norm_layer, use_dropout=False, n_blocks=2).to(device)
    netG_B = ResnetGenerator(3, 3, 8, norm_layer=norm_layer, use_dropout=False, n_blocks=2).to(device)
    netD_A = NLayerDiscriminator(3, 8, n_layers=2, norm_layer=norm_layer).to(device)
    netD_B = NLayerDiscriminator(3, 8, n_layers=2, norm_layer=norm_layer).to(device)
    for net in (netG_A, netG_B, netD_A, netD_B):
        init_weights(net, 'normal', 0.02)
    print(netG_A.model[10])
    print(netD_A)
    for name, net in (('G_A', netG_A), ('D_A', netD_A)):
        num_params = sum(p.numel() for p in net.parameters())
        print('[Network %s] Total number of parameters : %.3f M' % (name, num_params / 1e6))

    criterionGAN = GANLoss('lsgan').to(device)
    criterionCycle = torch.nn.L1Loss()
    criterionIdt = torch.nn.L1Loss()
    fake_A_pool = ImagePool(opt.pool_size)
    fake_B_pool = ImagePool(opt.pool_size)
    optimizer_G = torch.optim.Adam(itertools.chain(netG_A.parameters(), netG_B.parameters()), lr=opt.lr * 10, betas=(opt.beta1, 0.999))
    optimizer_D = torch.optim.Adam(itertools.chain(netD_A.parameters(), netD_B.parameters()), lr=opt.lr * 10, betas=(opt.beta1, 0.999))

    def lambda_rule(epoch):
        lr_l = 1.0 - max(0, epoch + 1 - opt.n_epochs) / float(opt.n_epochs_decay + 1)
        return lr_l
    schedulers = [torch.optim.lr_scheduler.LambdaLR(o, lr_lambda=lambda_rule) for o in (optimizer_G, optimizer_D)]

    g = torch.Generator().manual_seed(1)
    A_all, B_all = stripes(24, False, g), stripes(24, True, g)
    for epoch in range(opt.n_epochs + opt.n_epochs_decay):
        losses = {}
        for i in range(0, 24, 4):
            real_A, real_B = A_all[i:i + 4].to(device), B_all[i:i + 4].to(device)
            fake_B = netG_A(real_A)
            rec_A = netG_B(fake_B)
            fake_A = netG_B(real_B)
            rec_B = netG_A(fake_A)
            # G_A and G_B
            set_requires_grad([netD_A, netD_B], False)
            optimizer_G.zero_grad()
            idt_A = netG_A(real_B)
            loss_idt_A = criterionIdt(idt_A, real_B) * opt.lambda_B * opt.lambda_identity
            idt_B = netG_B(real_A)
            loss_idt_B = criterionIdt(idt_B, real_A) * opt.lambda_A * opt.lambda_identity
            loss_G_A = criterionGAN(netD_A(fake_B), True)
            loss_G_B = criterionGAN(netD_B(fake_A), True)
            loss_cycle_A = criterionCycle(rec_A, real_A) * opt.lambda_A
            loss_cycle_B = criterionCycle(rec_B, real_B) * opt.lambda_B
            loss_G = loss_G_A + loss_G_B + loss_cycle_A + loss_cycle_B + loss_idt_A + loss_idt_B
            loss_G.backward()
            optimizer_G.step()
            # D_A and D_B
            set_requires_grad([netD_A, netD_B], True)
            optimizer_D.zero_grad()
            fake_B_ = fake_B_pool.query(fake_B)
            loss_D_A = (criterionGAN(netD_A(real_B), True) + criterionGAN(netD_A(fake_B_.detach()), False)) * 0.5
            loss_D_A.backward()
            fake_A_ = fake_A_pool.query(fake_A)
            loss_D_B = (criterionGAN(netD_B(real_A), True) + criterionGAN(netD_B(fake_A_.detach()), False)) * 0.5
            loss_D_B.backward()
            optimizer_D.step()
            for k, v in (('D_A', loss_D_A), ('G_A', loss_G_A), ('cycle_A', loss_cycle_A), ('idt_A', loss_idt_A),
                         ('D_B', loss_D_B), ('G_B', loss_G_B), ('cycle_B', loss_cycle_B), ('idt_B', loss_idt_B)):
                losses[k] = float(v)  # get_current_losses()
            if i % 12 == 0:  # print_freq
                message = '(epoch: %d, iters: %d) ' % (epoch + 1, i)
                for k, v in losses.items():
                    message += '%s: %.3f ' % (k, v)
                print(message)
        old_lr = optimizer_G.param_groups[0]['lr']
        for scheduler in schedulers:
            scheduler.step()
        lr = optimizer_G.param_groups[0]['lr']
        print('learning rate %.7f -> %.7f' % (old_lr, lr))

    with torch.no_grad():
        cycle = (netG_B(netG_A(A_all)) - A_all).abs().mean().item()
    print('pool sizes', fake_A_pool.num_imgs, len(fake_B_pool.images), 'mean cycle error %.4f' % cycle)


if __name__ == '__main__':
    main()
